"""Device facts from sysfs, /proc, libblkid and udev, live or from a captured tree."""
