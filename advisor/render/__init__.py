"""Turning decisions into text: the mkfs.xfs command, the fstab line, explanations for people."""
