"""The only code that touches the host: the sysfs/proc reader, the command runner, argv builders."""
