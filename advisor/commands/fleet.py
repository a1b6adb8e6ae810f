"""`xfs-advisor fleet DIR`: one report from the results ansible/playbook.yml stored for each host
(capture, audit, proposals), with proposals made again here from the captures."""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "fleet", parents=[common],
        help="one report for many hosts, from the results the Ansible role fetched",
        description="Read DIR/HOST/ for every host (what ansible/playbook.yml stores: the "
        "host's capture, audit and proposals) and report per host and device: kind, size, "
        "stripe, audit findings by severity and the proposal, made again here from the capture "
        "with this machine's rules (--rules adds site rules); and which hosts share a hardware "
        "shape and get the same proposal. A host whose collection failed is listed with its "
        "error.")
    p.add_argument("dir", metavar="DIR", help="the results folder (xfs_advisor_results_dir)")
    p.add_argument("--markdown", action="store_true", help="Markdown instead of the table")
    p.add_argument("--html", action="store_true",
                   help="one self-contained HTML page (sortable, filterable table; no network)")
    p.add_argument("--csv", action="store_true",
                   help="CSV instead of the table: the rows, then one row per finding")
    p.add_argument("--output", "-o", metavar="FILE", default=None,
                   help="write the report (table, Markdown or JSON) to FILE instead of stdout")
    p.add_argument("--rules", metavar="DIR", default=argparse.SUPPRESS,
                   help="extra rules: files here add rules or replace built-in ones by id")
    p.add_argument("--jobs", "-j", metavar="N", type=int, default=None,
                   help="worker processes (default: one per CPU)")
    p.add_argument("--fail-on", choices=["breaks", "will-break", "performance", "info"],
                   default=None, help="exit 6 when a host has an audit finding at or above this "
                   "severity (a gate; default: exit 0 whatever the findings)")
    p.add_argument("--kernel", metavar="X.Y", default=None,
                   help="the kernel the hosts are moving to (spelt as must_mount_on_kernel: "
                   "\"6.19\", a `uname -r` or a distribution such as rhel9 or debian12): a "
                   "will-break finding due by that kernel counts as breaks, in --by-rule and "
                   "--fail-on too (which hosts will the new kernel refuse? --kernel 6.19 "
                   "--by-rule --fail-on breaks)")
    view = p.add_mutually_exclusive_group()
    view.add_argument("--by-rule", action="store_true",
                      help="only the findings grouped by rule id, with their hosts and counts "
                      "(which hosts will the next kernel refuse?)")
    view.add_argument("--by-proposal", action="store_true",
                      help="only the proposals grouped by decision, with their reasons, "
                      "warnings and hosts (which hosts got a non-default proposal, and why?)")
    view.add_argument("--since", metavar="OLD", default=None,
                      help="what changed since a previous collection: OLD is a previous "
                      "results folder (reported again with the same rules) or a saved `fleet "
                      "--json` file; hosts added, removed, failed and recovered, findings gained "
                      "and cleared by rule id, proposals changed (with --json: the report with "
                      "its `since` part). The exit code is the report's: 0, or 6 with --fail-on "
                      "when a host fails now; 2 when OLD cannot be read")


def run(args: argparse.Namespace) -> int:
    from advisor.errors import EXIT_FINDINGS, BadInput
    from advisor.fleet import fleet_report, previous_report, since
    from advisor.render.fleet import (
        csv_text,
        html,
        markdown,
        proposals_view,
        rules_view,
        since_view,
        table,
    )

    if args.jobs is not None and args.jobs < 1:
        raise BadInput(f"--jobs {args.jobs}: give 1 or more worker processes")
    if getattr(args, "sysroot", None):
        raise BadInput("fleet reads each host's own capture: drop --sysroot")
    if args.since is not None and (args.markdown or args.html or args.csv):
        raise BadInput("--since prints the changes as text or --json: drop --markdown, --html "
                       "or --csv")
    from advisor.console import notice
    from advisor.session import Session

    told = functools.partial(notice, as_json=args.json)
    doc = fleet_report(args.dir, Session, getattr(args, "rules", None), args.jobs, args.fail_on,
                       args.kernel, told)
    if args.since is not None:
        before = previous_report(args.since, Session, getattr(args, "rules", None), args.jobs,
                                 args.kernel, told)
        doc.since = since(doc, before, args.since)
    from advisor.render.inert import json_text, terminal_lines

    # Host names, errors and findings come from the hosts: escaped for whatever reads them.
    if args.json:
        text = json_text(doc.model_dump_json(indent=2) + "\n")
    elif args.html:
        text = html(doc)
    elif args.csv:
        text = csv_text(doc)
    elif args.by_rule:
        text = terminal_lines(rules_view(doc))
    elif args.by_proposal:
        text = terminal_lines(proposals_view(doc))
    elif args.since is not None:
        text = terminal_lines(since_view(doc))
    else:
        text = terminal_lines(markdown(doc) if args.markdown else table(doc))
    if args.output:
        from advisor.system.files import write_text_atomically

        written = write_text_atomically(args.output, text, "fleet report")
        notice(f"wrote {written}", args.json)
    else:
        sys.stdout.write(text)
    return EXIT_FINDINGS if doc.failing_hosts else 0
