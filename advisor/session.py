"""One session with the advisor, shared by both front ends: the command line (argparse -> Session ->
render) and the TUI (screens -> Session). It knows where devices are read from (the live system
or a captured tree), which rules apply, where noise floors are kept, and caches the inventory, the
host's environment and the rule book, so both front ends decide everything the same way.

Heavy parts (the engine, the benchmark, the scan, the device models and so pydantic) are imported
where they are used: building a Session costs nothing (the TUI paints its first screen before
pydantic is loaded), and `devices --json` never loads the benchmark.
"""

from __future__ import annotations

import functools
import os
import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.errors import AdvisorError, BadInput
from advisor.system.sysroot import SysRoot

if TYPE_CHECKING:
    from advisor.bench.cleanup import Recovery
    from advisor.bench.hold import DeviceHold
    from advisor.bench.plan import Plan
    from advisor.engine.rulebook import RuleBook
    from advisor.models.audit import AuditDocument, Severity
    from advisor.models.bench import Attribution, NotApplied, SideConfig, ValidationReport
    from advisor.models.device import Device, Inventory
    from advisor.models.environment import Environment
    from advisor.models.profile import Profile
    from advisor.models.proposal import Proposal, ProposalWarning
    from advisor.models.workload import Workload
    from advisor.observe.live import LiveObservation

Progress = Callable[[int, int, str], None]
Sample = Callable[[str, int, dict[str, float]], None]


class Cancelled(AdvisorError):
    """The person cancelled the validation run (what it made was removed, or is named)."""

    kind = "cancelled"


@dataclass(frozen=True)
class ObsoleteAdvice:
    """Advice found all over the web that the advisor never gives, and why."""

    rule: str
    advice: str
    since: str
    today: str


@dataclass(frozen=True)
class AttributionChoice:
    """What an attribution after a verdict would run: one A/B run per option of B, or why
    none."""

    options: tuple[str, ...]
    seconds: float
    why_not: str | None
    pairs: int
    budget_seconds: float
    combined_seconds: float

    def announcement(self) -> str:
        """The line `validate --attribute` says before the option runs, or why they do not
        run."""
        if self.why_not:
            return f"attribution: not run: {self.why_not}"
        return (f"attribution: {len(self.options)} more A/B runs, one per option "
                f"({', '.join(self.options)}), {self.pairs} pairs and a "
                f"{self.budget_seconds:.0f} s budget each: about {self.seconds / 60:.0f} min "
                f"(the combined run took {self.combined_seconds:.0f} s)")


class Session:
    """Where the advisor looks and what it applies. `sysroot`: a captured tree instead of the live
    system; `rules_dir`: site rules on top of the rule book; `calibration_file`: where noise floors
    are kept (default: advisor.bench.calibration.default_path())."""

    def __init__(self, sysroot: str | None = None, rules_dir: str | None = None,
                 calibration_file: str | None = None, *,
                 inventory: Inventory | None = None, rulebook: RuleBook | None = None,
                 local_xfsprogs: Callable[[], str | None] | None = None) -> None:
        """`inventory`: a fixed set of devices (tests, a replay), never re-read. `rulebook`: one
        already loaded; `local_xfsprogs`: what tells this machine's xfsprogs version (the fleet
        report shares both across its hosts' sessions)."""
        self.sysroot = sysroot
        self.rules_dir = rules_dir
        self.calibration_file = calibration_file
        self.root = SysRoot.open(sysroot)  # BadInput now, for a tree that is not one
        self._inventory: Inventory | None = inventory
        self._fixed = inventory is not None
        self._local_xfsprogs = local_xfsprogs
        if rulebook is not None:
            self.__dict__["rulebook"] = rulebook  # what the cached property below would hold

    @property
    def live(self) -> bool:
        """True when the session reads the running system (devices can be formatted); False for
        a captured tree."""
        return self.root.live

    @property
    def follows_hotplug(self) -> bool:
        """True when devices coming and going change what the session shows."""
        return self.live and not self._fixed

    # ---- devices ----

    def inventory(self, *, refresh: bool = False, probe: bool = True,
                  fields: frozenset[str] | None = None, users: bool = False) -> Inventory:
        """Every block device, read once and kept until `refresh`. libblkid is asked on the live
        system as root; a capture brings its own probe results. `probe` False (sysfs and /proc
        only), `fields` (only these Device fields, `devices --json --fields`) or `users` (which
        processes hold each device open, as root) make a scan of their own, which is not
        kept."""
        from advisor.inspect.devices import inspect_devices

        if (not probe or fields is not None or users) and not self._fixed:
            return inspect_devices(self.root, probe=probe, fields=fields, users=users)
        if self._inventory is None or (refresh and not self._fixed):
            self._inventory = inspect_devices(self.root)
        return self._inventory

    def device(self, name: str) -> Device:
        """The device called `name` (kernel name, dm name, /dev path); DeviceProblem otherwise.
        Without a kept inventory only what the device's facts depend on is read."""
        from advisor.inspect.devices import find_device, inspect_one

        if self._inventory is None and not self._fixed:
            found = inspect_one(self.root, name)
            if found is not None:
                return found
        return find_device(self.inventory(), name)

    # ---- advice ----

    @functools.cached_property
    def environment(self) -> Environment:
        """The host the proposal is for: the capture's kernel, memory and CPUs; this machine's
        xfsprogs, which makes the checks."""
        from advisor.system.versions import read_environment

        if self._local_xfsprogs is not None:
            return read_environment(self.root, local_xfsprogs=self._local_xfsprogs)
        return read_environment(self.root)

    @functools.cached_property
    def rulebook(self) -> RuleBook:
        from advisor.engine.rulebook import load_rulebook

        return load_rulebook(Path(self.rules_dir) if self.rules_dir else None)

    def propose(self, device: Device, workload: Workload,
                timings: dict[str, float] | None = None, *,
                of_this_host: bool = True) -> Proposal:
        """The checked proposal for `device` and `workload`, with this session's rules and
        environment. `of_this_host`: the device is one of the session's host (not described
        by a --device-file), whose other devices (an external log's) are looked at too."""
        from advisor.advice import propose
        from advisor.system.mkfs import HostMkfs

        mkfs = HostMkfs()
        if device.size_bytes.value and device.zoned.value != "host-managed":
            # mkfs.xfs -N runs while `mkfs.xfs -V` and the rule book are read
            mkfs.defaults_ahead(device)
        proposal = propose(device, workload, env=self.environment, rulebook=self.rulebook,
                           mkfs=mkfs, timings=timings)
        said = (self._log_device_warnings(proposal, workload.storage.log_device)
                if of_this_host else [])
        if not said:
            return proposal
        return proposal.model_copy(update={"warnings": [*proposal.warnings, *said]})

    def _log_device_warnings(self, proposal: Proposal,
                             path: str | None) -> list[ProposalWarning]:
        """What stands in the way of the external log the proposal puts on `path` (the answer
        storage.log_device), as this session's devices show it: mkfs.xfs writes the log there
        and destroys what is on it. None is said when the proposal keeps the log inside."""
        from advisor.errors import DeviceProblem
        from advisor.models.obstacles import obstacles
        from advisor.models.proposal import ProposalWarning

        if path is None or not any(o.startswith("logdev=") or ",logdev=" in o
                                   for o in proposal.mkfs_options):
            return []
        try:
            log = self.device(path)  # its stack only, as the data device's
        except DeviceProblem:
            host = "this host" if self.live else "the captured host"
            return [ProposalWarning(rule="external-log", message=(
                f"the log device {path} (storage.log_device) is not a block device of {host}: "
                f"`-l logdev={path}` fails there; answer a device it has"))]
        return [ProposalWarning(rule="external-log", message=f"the log device {o.sentence(path)}")
                for o in obstacles(log) if o.blocks]

    def obsolete_advice(self) -> list[ObsoleteAdvice]:
        """The rule book's obsolete advice, for the proposal's "why not" section."""
        found = []
        for rule in self.rulebook.of_kind("obsolete"):
            if rule.obsolete is not None:
                found.append(ObsoleteAdvice(rule.id, ", ".join(rule.obsolete.matches),
                                            rule.obsolete.since, rule.obsolete.today))
        return found

    # ---- validation: an A/B run on the live system ----

    def require_live(self, what: str) -> None:
        """Refuse (exit 2) what only the live system can do, in a session on a capture."""
        if not self.live:
            raise BadInput(f"{what} runs on this machine: --sysroot {self.sysroot} is a captured "
                           "tree (drop --sysroot)")

    def recover(self, say: Callable[[str], None] | None = None, *, loop: bool) -> Recovery:
        """What dead runs left, removed first, before any guard looks at a device (a killed
        run's own mount would make it refuse); after the host check, so that without root the
        message is that. `say` gets each "recovered: ..." line."""
        self.require_live("validation")
        from advisor.bench.cleanup import recover_and_say
        from advisor.bench.run import check_host

        check_host(need_loop=loop)
        return recover_and_say(say)

    def scratch_refusals(self, device: Device, left: dict[str, str] | None = None) -> list[str]:
        """The scratch-device guard's reasons not to format `device` (empty: it may be used).
        `left`: test filesystems dead runs left (Recovery.test_filesystems), not counted as
        data."""
        from advisor.bench.cleanup import without_test_filesystem
        from advisor.bench.guard import refusals
        from advisor.bench.plan import MIN_DEVICE_BYTES

        if not self.live:
            return ["a captured tree: only the live system's devices can be formatted"]
        judged = without_test_filesystem(device, left or {})
        return refusals(self.inventory(), judged, MIN_DEVICE_BYTES,
                        unrecognized_ok=judged is not device)

    def scratch_verdicts(self, inventory: Inventory | None = None
                         ) -> list[tuple[Device, list[str]]]:
        """Every device of `inventory` (default: the session's) with the guard's reasons not to
        format it (empty: a usable scratch device), in natural name order; the kernel is asked
        about loop bindings, and the inventory scanned, once for all of them. Empty on a
        captured tree (nothing there can be formatted)."""
        if not self.live:
            return []
        from advisor.bench.guard import Links, live_links, refusals, scope_of
        from advisor.bench.plan import MIN_DEVICE_BYTES
        from advisor.models.device import natural_key

        inventory = inventory or self.inventory()
        links = live_links(inventory) if inventory.live else Links()
        scope = scope_of(inventory)
        # Not read device by device (1,024 free LUNs would be 2 GiB read): the device chosen
        # from the list goes through scratch_refusals, which reads it.
        return [(d, refusals(inventory, d, MIN_DEVICE_BYTES, links=links, scope=scope,
                             read_data=False))
                for d in sorted(inventory.devices, key=lambda d: natural_key(d.name))]

    def check_scratch(self, name: str, left: dict[str, str] | None = None, *,
                      unrecognized_ok: bool = False) -> Device:
        """The device called `name`, read afresh and through the guard; DeviceProblem naming
        every reason otherwise. `unrecognized_ok`: data no signature names may be destroyed
        (validate --destroy-unrecognized-data)."""
        from advisor.bench.cleanup import without_test_filesystem
        from advisor.bench.guard import check_scratch
        from advisor.bench.plan import MIN_DEVICE_BYTES

        self.require_live("validation")
        inventory = self.inventory(refresh=True)
        device = self.device(name)
        judged = without_test_filesystem(device, left or {})
        check_scratch(inventory, judged, MIN_DEVICE_BYTES,
                      unrecognized_ok=unrecognized_ok or judged is not device)
        return device

    @staticmethod
    def proposal_side(proposal: Proposal) -> SideConfig:
        """Side B of the A/B run: the proposal's mkfs and mount options (without -K: every run
        makes its filesystem with -K). Here because B is what this session's runs make, from
        `validate`, the TUI's plans and loop_side alike; static because it reads only the
        proposal."""
        from advisor.models.bench import SideConfig
        from advisor.system.argv import pairs_only

        return SideConfig(label="B", mkfs_options=pairs_only(proposal.mkfs_options),
                          mount_options=list(proposal.mount_options), source="proposal")

    def fit_to_scratch(self, side: SideConfig, scratch: Device | None,
                       device_bytes: int) -> tuple[SideConfig, list[NotApplied]]:
        """`side` (a proposal made for some device) as the scratch device can run it, and the
        options left out with mkfs.xfs's reason. `scratch`: the scratch device (None: the loop
        default, a plain disk of `device_bytes`)."""
        from advisor.bench.fit import fit, same_as_defaults
        from advisor.models.device import Device, Fact
        from advisor.models.units import human_size
        from advisor.system.mkfs import HostMkfs

        stand_in = scratch or Device(
            name="loop", display_name="loop", path="/dev/loopN", kind="loop",
            size_bytes=Fact(value=device_bytes, source="plan"),
            logical_sector=Fact(value=512, source="plan"),
            physical_sector=Fact(value=512, source="plan"))
        mkfs = HostMkfs()  # each dry run once: the set fit kept is the one compared
        ran, left = fit(side, lambda options: mkfs.rejection(stand_in, options))
        ran, same = same_as_defaults(
            ran, lambda options: (mkfs.check(stand_in, options) if options
                                  else mkfs.defaults(stand_in)).geometry,
            f"the {human_size(device_bytes)} scratch device")
        return ran, left + same

    def fit_loop(self, plan: Plan, shown: SideConfig, target_bytes: int, *,
                 grow: bool = True) -> None:
        """B = `shown` (the proposal for a device of `target_bytes`) as a loop device can run it,
        for `validate --for DEV` and the TUI's loop run alike: options the loop device cannot
        take are left out and named (plan.not_applied), as are those that make no difference
        there; with `grow`, a loop device of that device's size (when it is the smaller one), or
        as large as it (or as the loop folder has room for), is used when it leaves out fewer."""
        from advisor.bench.plan import MIN_DEVICE_BYTES, loop_room

        plan.proposed = shown
        plan.b, plan.not_applied = self.fit_to_scratch(shown, None, plan.device_bytes)
        if not plan.not_applied or not grow:
            return
        if MIN_DEVICE_BYTES <= target_bytes < plan.device_bytes:
            # The device's own size (whole GiB): an option may be the default on a larger loop
            # device, as 1 GiB AGs are on 4 GiB.
            size = target_bytes >> 30 << 30
        else:
            size = loop_room(plan.loop_dir, target_bytes)
            if size <= plan.device_bytes:
                return
        ran, left = self.fit_to_scratch(shown, None, size)
        if len(left) < len(plan.not_applied):
            plan.device_bytes, plan.b, plan.not_applied = size, ran, left

    def loop_side(self, workload: Workload) -> Callable[[str], SideConfig]:
        """For a loop run: B decided from the loop device's own facts, once it is attached."""

        def resolve(path: str) -> SideConfig:
            from advisor.inspect.devices import find_device, inspect_devices

            device = find_device(inspect_devices(SysRoot(), probe=False), path)
            return self.proposal_side(self.propose(device, workload))

        return resolve

    def validation_plan(self, workload: Workload, target: Device | None,
                        b: SideConfig | None = None, *, device_bytes: int | None = None,
                        budget_seconds: float | None = None, pairs: int | None = None) -> Plan:
        """A (defaults) against B on the scratch device `target`, or on a loop device (target
        None). B: the given side, else the proposal, for a loop device made once it exists
        (pass loop_side() to run_validation), as `xfs-advisor validate` does."""
        from advisor.bench.plan import Plan as BenchPlan
        from advisor.models.bench import SideConfig
        from advisor.models.limits import DEFAULT_BUDGET, DEFAULT_LOOP_SIZE, DEFAULT_PAIRS

        size = device_bytes or DEFAULT_LOOP_SIZE
        if target is not None and target.size_bytes.value:
            size = target.size_bytes.value
        return BenchPlan(a=SideConfig(label="A"),
                         b=b or SideConfig(label="B", source="proposal"), workload=workload,
                         device=target.path if target else None, device_bytes=size,
                         budget_seconds=budget_seconds or DEFAULT_BUDGET,
                         pairs=pairs or DEFAULT_PAIRS)

    def run_validation(self, plan: Plan, *, progress: Progress | None = None,
                       cancel: threading.Event | None = None,
                       resolve_b: Callable[[str], SideConfig] | None = None,
                       on_sample: Sample | None = None,
                       say: Callable[[str], None] | None = None,
                       hold: DeviceHold | None = None,
                       recovered: Recovery | None = None,
                       finish: threading.Event | None = None) -> ValidationReport:
        """Run the plan. Setting `cancel` (from another thread) stops it at the next step, or
        at once by ending fio; what the run made is removed either way, then Cancelled is
        raised. Setting `finish` ends it gently instead: after the current ABBA block (once the
        minimum pairs ran), judged, with `stopping.reason` "cancelled" (the confidence
        sequences hold whenever a run stops). The rest as advisor.bench.run.execute."""
        self.require_live("validation")
        from advisor.bench.calibration import CalibrationStore
        from advisor.bench.cleanup import stop_our_fio
        from advisor.bench.run import execute
        from advisor.system.runner import start_thread

        store = CalibrationStore(Path(self.calibration_file) if self.calibration_file else None)
        store.check(writing=plan.calibrate)  # a corrupt file is bad input now, not after the run
        if not plan.claims:  # what the rules say their options do, checked against the counters
            plan.claims = [(r.id, c) for r in self.rulebook.all() for c in r.mechanism]
        cancel = cancel or threading.Event()
        said: list[str] = []

        def step(done: int, total: int, what: str) -> None:
            if cancel.is_set():
                raise Cancelled("validation cancelled")
            if progress:
                progress(done, total, what)

        def tell(line: str) -> None:
            said.append(line)
            if say:
                say(line)

        finished = threading.Event()

        def watch() -> None:
            cancel.wait()
            if not finished.is_set():
                stop_our_fio(sig=signal.SIGKILL)  # the runner takes a kill as a failed step

        # Started with Ctrl-C deferred: validate runs this in the main thread (start_thread).
        start_thread(threading.Thread(target=watch, name="cancel-watch", daemon=True))
        try:
            return execute(plan, progress=step, store=store, resolve_b=resolve_b,
                           on_sample=on_sample, recovered=recovered, say=tell, hold=hold,
                           stop=finish.is_set if finish is not None else None)
        except AdvisorError:
            if cancel.is_set():
                # What clean-up said: only what it could not remove (the next run will).
                raise Cancelled("validation cancelled; " + ("; ".join(said) or
                                "everything it made was removed")) from None
            raise
        finally:
            finished.set()
            cancel.set()  # lets the watcher end

    # ---- after a verdict: files, attribution, more pairs ----
    # What a report says (its lines, its Markdown, what attribution found) and the metrics'
    # titles are words and data: advisor.render.validation and advisor.models.bench, which both
    # front ends import. What stays here reads or writes the host, or plans a run.

    @staticmethod
    def write_file(target: Path, text: str, what: str) -> Path:
        """A file the person named, written whole (regular files only, atomically, mode and
        owner kept: advisor.system.files); the path written. Here because the TUI writes files
        (a report, a proposal, answers, a recording) only through the session; static because
        the file is the person's, written on this machine whatever host the session reads (a
        capture too)."""
        from advisor.system.files import write_text_atomically

        return write_text_atomically(target, text, what)

    @staticmethod
    def attribution_choice(plan: Plan, report: ValidationReport, *,
                           held: bool = False) -> AttributionChoice:
        """What attribute() would run after the verdict on `plan`, and about how long, or why
        it would not. `held`: a scratch device stays held between the runs (validate
        --attribute right after the combined run); without it a scratch device is refused.
        Here because it plans the runs attribute() makes (advisor.bench.attribute's estimate);
        static because it needs only the plan and the report."""
        from advisor.bench import attribute as attribution
        from advisor.models import differences

        chosen = differences.options(plan.a, plan.b)
        why = attribution.skip_reason(report, chosen)
        if why is None and plan.device is not None and not held:
            why = (f"on {plan.device} it runs from the command line, with the device held "
                   f"between runs: xfs-advisor validate --device {plan.device} --attribute")
        seconds = 0.0 if why else attribution.estimate_seconds(plan, len(chosen),
                                                               report.timing.wall_seconds)
        return AttributionChoice(options=tuple(o.label for o in chosen), seconds=seconds,
                                 why_not=why, pairs=plan.pairs,
                                 budget_seconds=plan.budget_seconds,
                                 combined_seconds=report.timing.wall_seconds)

    @classmethod
    def attribution_offer(cls, plan: Plan, report: ValidationReport) -> str:
        """After a verdict on `plan`, as the TUI offers it: what attribute() would run and about
        how long ("ctrl+b: ..."), why it is not offered ("Attribution: not offered: ..."), or ""
        when the report already holds one. Beside attribution_choice, whose plan it offers."""
        if report.attribution is not None:
            return ""
        choice = cls.attribution_choice(plan, report)
        if choice.why_not:
            return f"Attribution: not offered: {choice.why_not}"
        return (f"ctrl+b: which option moved what: {len(choice.options)} more A/B runs "
                f"({', '.join(choice.options)}), about {choice.seconds / 60:.0f} min")

    def attribute(self, plan: Plan, combined: ValidationReport | None = None, *,
                  progress: Progress | None = None, cancel: threading.Event | None = None,
                  say: Callable[[str], None] | None = None,
                  hold: DeviceHold | None = None) -> Attribution:
        """Which of B's options moved which metric and counter: one A/B run per option of
        `plan`'s B (A against A plus that option alone; advisor.bench.attribute), each through
        run_validation. `combined`: the report of `plan` itself, when it ran. On a scratch device
        (`plan.device`), `hold` is the one the combined run had, lent to it (DeviceHold.lent) so
        that it is still held: each option run then expects exactly the XFS the run before it
        made (by UUID, read while held) and nothing else. `progress(done, total, what)` counts
        over all the option runs; `cancel` stops them like run_validation's."""
        from advisor.bench import attribute as attribution
        from advisor.bench.cleanup import Recovery
        from advisor.models import differences
        from advisor.system.loopdev import dev_name
        from advisor.system.runner import start_thread
        from advisor.system.superblock import read_xfs_uuid

        if plan.device is not None and (hold is None or not hold.exclusive):
            from advisor.errors import DeviceProblem

            raise DeviceProblem(f"attribution on {plan.device} needs the device still held from "
                                "the combined run (validate --attribute runs right after it)")
        cancel = cancel or threading.Event()
        chosen = differences.options(plan.a, plan.b)
        steps = 2 * plan.pairs + 1

        def run_one(p: Plan, index: int) -> ValidationReport:
            if cancel.is_set():
                raise Cancelled("attribution cancelled")
            label = chosen[index].label

            def step(done: int, total: int, what: str) -> None:
                if progress:
                    progress(index * steps + done, len(chosen) * steps,
                             f"{label} alone: {what}")

            mine, finished = threading.Event(), threading.Event()

            def forward() -> None:  # this run's cancel follows the caller's
                while not finished.is_set():
                    if cancel.wait(0.2):
                        mine.set()
                        return

            start_thread(threading.Thread(target=forward, name="attribute-cancel", daemon=True))
            try:
                if hold is None:
                    return self.run_validation(p, progress=step, cancel=mine, say=say)
                # Held exclusively since the previous run's last umount: this XFS is ours.
                ours = Recovery(test_filesystems={
                    dev_name(os.stat(hold.path).st_rdev): read_xfs_uuid(hold.path) or ""})
                with hold.lent():
                    return self.run_validation(p, progress=step, cancel=mine, say=say,
                                               hold=hold, recovered=ours)
            finally:
                finished.set()

        return attribution.attribute(plan, run_one, combined)

    def more_rounds(self, report: ValidationReport, pairs: int | None = None, *,
                    budget_seconds: float | None = None, loop_dir: str | None = None,
                    progress: Progress | None = None,
                    cancel: threading.Event | None = None,
                    finish: threading.Event | None = None,
                    on_sample: Sample | None = None,
                    say: Callable[[str], None] | None = None,
                    source: str = "the report") -> ValidationReport:
        """Continue a finished loop-device validation with more ABBA blocks: the same sides,
        workload shape and margins, on a fresh loop device of the same size; the earlier pairs
        are kept and the confidence sequences simply go on (they hold at every number of
        pairs, so continuing after a look is not peeking). Stops when every metric is resolved,
        after `pairs` more pairs (default: what the report says would likely resolve the open
        ones, at least one block) or when `budget_seconds` (default: the report's) runs out.
        The report is input (a file from anywhere): every number the run would act on is held
        to the bounds the flags have, before anything is made (BadInput naming `source`)."""
        plan = self.continuation_plan(report, pairs, budget_seconds=budget_seconds,
                                      loop_dir=loop_dir, source=source)
        return self.run_validation(plan, progress=progress, cancel=cancel, finish=finish,
                                   on_sample=on_sample, say=say)

    def continuation_plan(self, report: ValidationReport, pairs: int | None = None, *,
                          budget_seconds: float | None = None, loop_dir: str | None = None,
                          source: str = "the report") -> Plan:
        """The plan more_rounds runs for `report`, so that a front end can refuse before it
        starts anything: BadInput on a captured tree, for a calibration or a scratch-device
        run (which cannot be continued), and for numbers out of the flags' bounds or a backing
        file the loop folder cannot hold."""
        from advisor.bench.plan import continuation

        self.require_live("validation")
        return continuation(report, pairs, budget_seconds=budget_seconds, loop_dir=loop_dir,
                            source=source)

    # ---- audit ----

    def live_observation(self, device: Device) -> LiveObservation:
        """A live view of the XFS filesystem mounted from `device` (counters only)."""
        self.require_live("a live view of a filesystem")
        if not device.usage.mountpoints:
            raise BadInput(f"{device.name} is not mounted: there is nothing to watch")
        from advisor.observe.live import live_observation

        return live_observation(device.usage.mountpoints[0])

    @staticmethod
    def live_reading(live: LiveObservation) -> tuple[str, dict[str, float]]:
        """One refresh of a live view: read the counters now; what they show, and the key
        rates of the last interval (per second, by label) for its plot. Here because it reads
        the host (the TUI reaches advisor.observe only through the session); static because
        the live view, not the session, holds what it reads."""
        from advisor.observe.live import key_rates, live_text

        window, total = live.step()
        return live_text(window, total, live.steps), key_rates(window)

    @staticmethod
    def live_recording_text(live: LiveObservation) -> str:
        """Stop a live view's recording: the counters read now, as `observe --record FILE`
        writes them (for `observe --replay FILE`). Here and static as live_reading."""
        from advisor.observe.observation import recording_text

        return recording_text(live.stop_recording())

    def audit(self, names: Sequence[str] = (), fstab: str | None = None,
              fail_on: Severity = "breaks", workload: Workload | None = None) -> AuditDocument:
        """Findings for the named filesystems (mount points or devices), or every XFS one the
        host has, and the fstab file (default /etc/fstab). Read-only: xfs_info, xfs_db -r.
        `workload`: the answers what the advisor would propose today is made for."""
        from advisor.audit import audit

        return audit(self, self.root, names, fstab, fail_on, workload)

    # ---- profile ----

    def profile(self, path: str, progress: Callable[[int, float], None] | None = None
                ) -> Profile:
        """Measure a directory tree (answers a scan can support). The tree is read where it is:
        a captured sysroot holds no files to scan."""
        self.require_live("profile")
        from advisor.profile.walker import Walker

        return Walker(progress=progress).walk(path)
