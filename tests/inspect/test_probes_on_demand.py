"""Probes asked a device at a time (the live system's libblkid and udev): each device asked
once when its usage and its udev facts are read one after the other, every result kept for a
capture, none kept for a streamed inventory; a capture's stored probes read the same way."""

from __future__ import annotations

from advisor.inspect.probes import Probed, Probes
from advisor.inspect.specs import FactStr, make_fact

SIG = make_fact(FactStr, "xfs", "blkid", "/dev/a", "TYPE=xfs", None)


class _Fake:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, name: str) -> Probed:
        self.asked.append(name)
        if name == "bad":
            return Probed([], False, "cannot open", {})
        return Probed([SIG] if name == "a" else [], True, None,
                      {"ID_MODEL": "M"} if name == "a" else {})


def test_each_device_is_asked_once_in_a_row_and_kept_only_when_asked_to() -> None:
    for keep in (True, False):
        fake = _Fake()
        probes = Probes(probed=True, probe=fake, keep=keep)
        for name in ("a", "a", "b", "bad", "bad", "a"):
            probes.of(name)
        assert fake.asked == ["a", "b", "bad", "a"]
        assert probes.of("a").signatures == [SIG] and probes.of("a").udev == {"ID_MODEL": "M"}
        assert probes.of("bad") == Probed([], False, "cannot open", {})
        if keep:  # as the capture writes them: what probing every device at once gave
            assert probes.signatures == {"a": [SIG], "b": []}
            assert probes.errors == {"bad": "cannot open"}
            assert probes.udev == {"a": {"ID_MODEL": "M"}}
        else:
            assert (probes.signatures, probes.errors, probes.udev) == ({}, {}, {})


def test_stored_probes_read_a_device_at_a_time() -> None:
    stored = Probes(probed=True, signatures={"a": [SIG], "b": []}, errors={"c": "gone"},
                    udev={"a": {"ID_WWN": "w"}})
    assert stored.of("a") == Probed([SIG], True, None, {"ID_WWN": "w"})
    assert stored.of("b") == Probed([], True, None, {})
    assert stored.of("c") == Probed([], False, "gone", {})
    assert Probes().of("a") == Probed([], False, None, {})
