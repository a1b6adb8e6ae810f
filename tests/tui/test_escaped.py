"""The TUI shows untrusted text as text: a notice naming a device, a path or an error from outside
is neither Rich markup nor a terminal sequence (advisor.render.inert)."""

from __future__ import annotations

from tests.tui.conftest import AppFactory


async def test_notices_are_plain_escaped_text(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test() as pilot:
        app.notify("cannot write /srv/[link=https://x]y[/link]\x1b]0;owned\x07: no space",
                   title="sd\x1b[2Ja")
        await pilot.pause()
        notice = list(app._notifications)[-1]
        assert notice.message == "cannot write /srv/[link=https://x]y[/link]\\e]0;owned\\x07: " \
            "no space"
        assert notice.title == "sd\\e[2Ja"
        assert notice.markup is False
