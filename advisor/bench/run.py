"""One A/B validation run's lifecycle: the host checked, what an earlier killed run left
recovered, the scratch device made or held, the pilot, the pairs in ABBA blocks until the
stopping rule ends them, and the judging; everything made is recorded by advisor.bench.resources
and undone on every path out of the one `with` that owns the clean-up. The plan is
advisor.bench.plan, a side advisor.bench.side, the judging advisor.bench.verdicts."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable

from advisor.bench import counters
from advisor.bench.calibration import CalibrationStore
from advisor.bench.cleanup import Recovery, recover_and_say
from advisor.bench.guard import UNRECOGNIZED_FLAG
from advisor.bench.hold import DeviceHold
from advisor.bench.options import checked_side
from advisor.bench.plan import HOST_EFFECTS, Plan, abba_order, primaries
from advisor.bench.resources import Resources
from advisor.bench.side import (
    JobFiles,
    Sample,
    Scratch,
    Tally,
    measure_pilot,
    measure_side,
    write_jobfiles,
)
from advisor.bench.verdicts import calibration_for, judge, margins_for, reason_to_stop
from advisor.errors import DeviceProblem, ToolProblem
from advisor.models.bench import (
    BenchEnvironment,
    SideConfig,
    StopReason,
    Timing,
    ValidationReport,
)
from advisor.signals import terminate_as_interrupt
from advisor.system import argv
from advisor.system.cgroup import open_isolation
from advisor.system.loopdev import dev_name
from advisor.system.runner import run, which

REQUIRED_TOOLS = ("mkfs.xfs", "mount", "umount", "losetup", "fio", "xfs_info")

Progress = Callable[[int, int, str], None]


def check_host(*, need_loop: bool) -> None:
    """One clear error before anything is made: tools present, root."""
    for tool in REQUIRED_TOOLS:
        if tool == "losetup" and not need_loop:
            continue
        if which(tool) is None:
            raise ToolProblem(f"{tool} not found: install it (Debian: apt-get install "
                              f"{'fio' if tool == 'fio' else 'xfsprogs util-linux procps'})")
    if os.geteuid() != 0:
        raise DeviceProblem(
            "validate needs root: it makes filesystems and mounts them")


def execute(plan: Plan, *, progress: Progress | None = None,
            store: CalibrationStore | None = None,
            resolve_b: Callable[[str], SideConfig] | None = None,
            say: Callable[[str], None] | None = None,
            on_sample: Sample | None = None,
            hold: DeviceHold | None = None,
            recovered: Recovery | None = None,
            stop: Callable[[], bool] | None = None) -> ValidationReport:
    """Run the plan and judge it. `progress(done, total, what)` is called before each step;
    `resolve_b(device)` decides side B once the (loop) device exists, for the proposal; `say`
    prints a line for people (what an earlier, killed run left and this one removed);
    `on_sample(side, round_index, values)` gets each side's values as soon as they are measured
    (an exception it raises ends the run, cleaned up like any other failure). `hold`: the scratch
    device as the caller checked and confirmed it (validate --device); without it the run opens
    its own. Right before every mkfs the guard runs again on the live system and the device must
    still be the one that was checked (advisor.bench.hold). Both sides' options are checked
    against what validate may pass (advisor.bench.options) before anything is made. `recovered`:
    what the caller's recover_and_say() found before its guard (None: recover here).

    Rounds: `plan.pairs` pairs first, then, after each ABBA block, a look at every metric's
    confidence sequence (advisor.bench.stats): the run stops when all are resolved, at
    `plan.max_pairs`, when another block would overrun the budget, or when `stop()` says so
    (checked between blocks once the minimum ran: the report says `cancelled`)."""
    started = time.monotonic()  # the budget counts the set-up and the clean-up too
    loads = [_load()]
    plan.a, plan.b = checked_side(plan.a), checked_side(plan.b)
    check_host(need_loop=plan.device is None)
    if recovered is None:
        recovered = recover_and_say(say)
    shape = plan.shape
    with terminate_as_interrupt(), Resources(say=say) as res, contextlib.ExitStack() as held:
        work, device, backing, hold = _device(plan, res, held, hold)
        # The one XFS the guard may find before the first mkfs: a killed run's, on this device.
        ours = recovered.test_filesystems.get(dev_name(os.stat(device).st_rdev))
        if resolve_b is not None:
            plan.b = checked_side(resolve_b(device))
            # Proposed for the loop device itself: what was proposed is what runs.
            plan.proposed, plan.proposed_for = plan.b, device
        env = _environment(plan, device, backing)
        isolation = open_isolation(f"xfs-advisor-{os.getpid()}")
        held.callback(isolation.close)
        env.isolation = isolation.summary
        floors, calibration = calibration_for(plan, env, store)
        margins = margins_for(plan, shape, floors)
        mnt = os.path.join(work, "mnt")
        os.mkdir(mnt)
        scratch = Scratch(plan=plan, hold=hold, res=res, device=device, work=work, mnt=mnt,
                          isolation=isolation, counted=counters.kernel_name(device), ours=ours)
        if plan.prior is None:
            if progress:
                progress(0, 2 * plan.planned_pairs, "pilot: this machine's rate")
            plan.pilot = measure_pilot(scratch, started)
            shape = plan.shape
        tally = Tally.start(shape, plan.prior)
        reason, blocks = _pairs(scratch, write_jobfiles(scratch, shape), tally, started, loads,
                                progress, on_sample, stop)
        wall = time.monotonic() - started
        loads.append(_load())
        env.load_average = [round(loads[0], 2), round(max(loads), 2), round(loads[-1], 2)]
    report = judge(plan, tally.samples, infos=tally.infos, env=env, shape=shape, age=tally.age,
                   timing=_timing(plan, tally, wall), recovered=recovered.done, store=store,
                   mechanisms=tally.mechanisms, calibrated=(floors, calibration),
                   margins=margins, stopping=(reason, tally.looks, _first(plan)),
                   seconds_per_pair=max(blocks) / 2 if blocks else None)
    if plan.device:
        report.device_left = (f"{plan.device} now holds the test filesystem of the last round: "
                              f"`wipefs -a {plan.device}` removes it before any other use (its "
                              f"signature: the rest stays, so validating on it again also takes "
                              f"{UNRECOGNIZED_FLAG})")
    return report


def _device(plan: Plan, res: Resources, held: contextlib.ExitStack,
            hold: DeviceHold | None) -> tuple[str, str, str | None, DeviceHold]:
    """The run's work folder (and the loop folder's missing parents), the device (a loop device
    over a backing file made there, or the plan's scratch device) and its hold, closed by
    `held` before Resources undoes anything: our own loop device detaches only when free.
    Returns the folder, the device, the backing file (None: a scratch device) and the hold."""
    res.make_folders(plan.loop_dir)
    work = res.make_dir(plan.loop_dir, "xfs-advisor-")
    backing: str | None = None
    if plan.device is None:
        backing = res.preallocate(os.path.join(work, "scratch.img"), plan.device_bytes)
        device = res.attach_loop(backing, direct_io=plan.direct_io)
    else:
        device = plan.device
    if hold is None:
        hold = held.enter_context(DeviceHold(device))
        if backing is not None:  # held open now: it cannot be re-bound any more
            res.check_loop(device)
            hold.verify()
    else:
        held.callback(hold.close)
    return work, device, backing, hold


def _first(plan: Plan) -> int:
    """Pairs the run starts from: those of the earlier run it continues."""
    return plan.prior.pairs if plan.prior is not None else 0


def _pairs(scratch: Scratch, job: JobFiles, tally: Tally, started: float, loads: list[float],
           progress: Progress | None, on_sample: Sample | None,
           stop: Callable[[], bool] | None) -> tuple[StopReason, list[float]]:
    """ABBA blocks of two pairs until the stopping rule (advisor.bench.verdicts) ends them, each
    side's step said to `progress` first; the machine's load noted after each block. Returns
    why the run stopped and each block's seconds."""
    plan = scratch.plan
    primary = primaries(plan)
    done = first = _first(plan)
    blocks: list[float] = []
    step = 0
    total = 2 * (plan.run_limit - first)  # the same total throughout: "at most" said from the start
    while True:
        block_started = time.monotonic()
        for i, label in enumerate(abba_order(2)):  # one ABBA block: two pairs
            index = done + i // 2
            if progress:
                progress(step, total, f"pair {index + 1} of at most {plan.run_limit}, "
                                      f"side {label}")
            step += 1
            measure_side(scratch, job, tally, label, index, on_sample)
        done += 2
        blocks.append(time.monotonic() - block_started)
        loads.append(_load())
        reason = reason_to_stop(plan, done, first, tally.looks, tally.samples, tally.mechanisms,
                                primary, time.monotonic() - started, max(blocks), stop)
        if reason is not None:
            if progress:
                progress(step, total, "judging")
            return reason, blocks


def _timing(plan: Plan, tally: Tally, wall: float) -> Timing:
    """Where the run's time went, an earlier run's included."""
    total = tally.earlier_wall + wall
    return Timing(wall_seconds=round(total, 2),
                  pilot_creates_per_s=plan.pilot.ops_rate if plan.pilot else None,
                  pilot_side_overhead=plan.pilot.side_overhead if plan.pilot else None,
                  measuring_seconds=round(tally.measuring, 2),
                  measuring_share=round(tally.measuring / total, 3) if wall else 0.0)


def _load() -> float:
    """The machine's 1-minute load average (0 where the system has none)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def _environment(plan: Plan, device: str, backing: str | None) -> BenchEnvironment:
    from advisor.system.versions import xfsprogs_version

    fio = run(argv.fio_version(), check=False, timeout=20)
    note = None
    if backing:
        note = (f"a loop device over {backing}: the numbers reflect the storage under "
                f"{os.path.dirname(os.path.dirname(backing))} and this machine, not a real device")
    return BenchEnvironment(
        kernel=os.uname().release,
        xfsprogs=xfsprogs_version(),
        fio=fio.stdout.strip() or None,
        device=device,
        device_size_bytes=plan.device_bytes,
        loop_backing_file=backing,
        direct_io=plan.direct_io if backing else None,
        cpu_count=os.cpu_count(),
        note=note,
        host_effects=HOST_EFFECTS,
    )
