"""Turning decisions into text: the mkfs.xfs command, the fstab line, explanations for people,
validation reports. Pure: models in, words out."""
