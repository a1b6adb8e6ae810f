"""A/B validation: the plan, the scratch-device guard, loop devices, fio jobs, statistics,
the run."""
