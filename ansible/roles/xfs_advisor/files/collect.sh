#!/bin/sh
# Run on each host by the xfs_advisor role: capture, audit --json and a proposal per named device,
# packed as a tar.gz into XFS_ADVISOR_PAYLOAD_FILE (the role fetches it), or without that as one
# base64 line "XFS-ADVISOR-PAYLOAD:..." on stdout. Stdout ends with "XFS-ADVISOR-AUDIT-RC:N",
# the audit's exit status (6: findings at or above XFS_ADVISOR_FAIL_ON). Every step's output,
# stderr and exit status go into the archive, with collected_at (when it started: UTC, ISO 8601): a step that fails is reported by the controller's
# `xfs-advisor fleet`, it does not stop the others. Works in a folder of its own, removed before
# it returns. Environment: XFS_ADVISOR_TOOL, XFS_ADVISOR_SYSROOT (optional),
# XFS_ADVISOR_DEVICES (space-separated), XFS_ADVISOR_WORKLOAD (JSON), XFS_ADVISOR_AUDIT (the
# filesystems to audit, space-separated; empty: all of the host's), XFS_ADVISOR_FAIL_ON (a
# severity for the audit's --fail-on), XFS_ADVISOR_OBSERVE_FOR (seconds of `observe --json`
# on the live host, never on XFS_ADVISOR_SYSROOT; empty or 0: no observation),
# XFS_ADVISOR_OBSERVE (the mount points to observe, space-separated; empty: every XFS),
# XFS_ADVISOR_PAYLOAD_FILE.
set -u
tool=${XFS_ADVISOR_TOOL:-xfs-advisor}
work=$(mktemp -d "${TMPDIR:-/tmp}/xfs-advisor-collect.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
trap 'exit 1' HUP INT TERM
out=$work/results
mkdir -p "$out/proposals"

set --
case ${XFS_ADVISOR_SYSROOT:-} in
    ""|/*) ;;
    *) XFS_ADVISOR_SYSROOT=$(pwd)/$XFS_ADVISOR_SYSROOT ;;  # the steps run from inside $out
esac
if [ -n "${XFS_ADVISOR_SYSROOT:-}" ]; then set -- --sysroot "$XFS_ADVISOR_SYSROOT"; fi
id -u > "$out/uid"
date -u +%Y-%m-%dT%H:%M:%SZ > "$out/collected_at"
printf '%s\n' "${XFS_ADVISOR_SYSROOT:-}" > "$out/sysroot"
workload=${XFS_ADVISOR_WORKLOAD:-}
printf '%s\n' "${workload:-"{}"}" > "$out/workload.json"
printf '%s\n' ${XFS_ADVISOR_DEVICES:-} > "$out/devices"

# step NAME COMMAND...: its stdout, stderr and exit status into NAME.out, NAME.err, NAME.rc.
step() {
    name=$1; shift
    "$@" > "$out/$name.out" 2> "$out/$name.err"
    echo $? > "$out/$name.rc"
}

if ! command -v "$tool" > /dev/null 2>&1; then
    echo "xfs-advisor is not installed on this host: no $tool (set xfs_advisor_install)" \
        > "$out/tool.err"
    echo 127 > "$out/tool.rc"
else
    step version "$tool" --version
    # From inside the results, named relatively: the output never holds this run's random
    # folder, so a host with nothing changed gives the same results (changed=0 on the controller).
    cd "$out" || exit 1
    step capture "$tool" "$@" capture --json capture
    fail_on=
    if [ -n "${XFS_ADVISOR_FAIL_ON:-}" ]; then fail_on="--fail-on=$XFS_ADVISOR_FAIL_ON"; fi
    # shellcheck disable=SC2086 # names, split on spaces; fail_on is one word or none
    step audit "$tool" "$@" audit --json $fail_on ${XFS_ADVISOR_AUDIT:-}
    case ${XFS_ADVISOR_OBSERVE_FOR:-0} in
        ""|0) ;;
        *[!0-9]*)
            echo "observe: XFS_ADVISOR_OBSERVE_FOR is not a number of seconds" > "$out/observe.err"
            echo 2 > "$out/observe.rc" ;;
        *)  # shellcheck disable=SC2086 # mount points, split on spaces
            step observe "$tool" observe --json --for "${XFS_ADVISOR_OBSERVE_FOR}s" \
                ${XFS_ADVISOR_OBSERVE:-} ;;
    esac
    for dev in ${XFS_ADVISOR_DEVICES:-}; do
        step "proposals/${dev##*/}" "$tool" "$@" propose --device "$dev" \
            --workload "$out/workload.json" --json
    done
fi
if [ -n "${XFS_ADVISOR_PAYLOAD_FILE:-}" ]; then
    tar -czf "$XFS_ADVISOR_PAYLOAD_FILE" -C "$out" . || exit 1
else
    printf 'XFS-ADVISOR-PAYLOAD:'
    tar -czf - -C "$out" . | base64 | tr -d '\n'
    echo
fi
echo "XFS-ADVISOR-AUDIT-RC:$(cat "$out/audit.rc" 2>/dev/null || echo none)"
