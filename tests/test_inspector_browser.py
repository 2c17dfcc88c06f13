"""The inspector in a real browser (docs/design.md §17): Playwright drives the distribution's
Chromium (`/usr/bin/chromium`; Playwright's own browser download is not used) through what a
person does, by clicking links: home → search → an entity → a challenger's observation → the
review of the commit that added it. It asserts what is on the screen, that no page logs a console
error, and that a phone's 390 px wide screen never scrolls sideways; light and dark.

Screenshots are kept as test artifacts: in INSPECTOR_SCREENSHOTS when set, else in a pytest
temporary folder. In CI (the CI variable set) a missing browser fails the test; elsewhere it
skips, saying why.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers import Server, obs_id, observation

CHROMIUM = "/usr/bin/chromium"  # the distribution's (apt-get install chromium)
ACME = "company/acme"


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: the browser test may not be skipped; .ci/run installs chromium with apt-get)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed (pip install '.[test]')")
    if shutil.which(CHROMIUM) is None:
        _missing(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--disable-gpu"])
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = Path(os.environ["INSPECTOR_SCREENSHOTS"]) if os.environ.get("INSPECTOR_SCREENSHOTS") else \
        tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def server(make_module_repo):
    """Three commits: Acme seen, a guess of its phone that will lose, the more specific reading that wins."""
    repo = make_module_repo()
    repo.add(observation(obs_id(1), entity=ACME, fields={"name": "Acme Corp"}, event="Acme seen at the fair",
                         type="company.seen", relations=[{"type": "PART_OF", "target": "company/holding"}]),
             observation(obs_id(2), entity="company/holding", fields={"name": "Holding plc"}, event="Holding registered"))
    repo.commit("Acme and its holding")
    repo.add(observation(obs_id(3), entity=ACME, fields={"phone": "+44 20 0000 0000"}, event="A guess of Acme's phone",
                         source="agent/guesser", specificity=0.2))
    repo.commit("a guess")
    repo.add(observation(obs_id(4), entity=ACME, fields={"phone": "+44 20 7946 0000"}, event="Acme's phone, from its site",
                         source="agent/web", specificity=0.9, type="company.phone"))
    repo.commit("the phone")
    running = Server(repo)
    yield running
    running.close()


class Watched:
    """A page whose console errors and uncaught exceptions are collected."""

    def __init__(self, context) -> None:
        self.page = context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda message: self.errors.append(message.text) if message.type == "error" else None)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))


def _no_sideways_scroll(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], (page.url, width)


# every text run of every id (the page marks where a line may break: <wbr> after `-` and `/`)
# laid out on one line: an id wraps only at those marks
SPLIT_IDS = """() => [...document.querySelectorAll('.id')].flatMap(el => {
  const runs = [...el.childNodes].filter(n => n.nodeType === Node.TEXT_NODE && n.textContent.trim());
  return runs.filter(run => { const r = document.createRange(); r.selectNodeContents(run);
    return new Set([...r.getClientRects()].map(box => Math.round(box.top))).size > 1; }).map(run => el.textContent);
})"""


def test_ids_wrap_only_at_their_separators_in_narrow_columns(browser, server):
    base = f"http://127.0.0.1:{server.port}"
    for width in (390, 700, 900):
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        for path in ("/", "/search?q=phone", f"/entity/{ACME}", f"/observation/{obs_id(4)}"):
            page.goto(base + path)
            assert page.evaluate(SPLIT_IDS) == [], (width, path)
        context.close()


def test_a_person_browses_from_home_to_a_review(browser, server, shots):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    watched = Watched(context)
    page = watched.page
    base = f"http://127.0.0.1:{server.port}"
    page.goto(base + "/")
    assert page.get_by_role("heading", name="The repository").is_visible()
    page.screenshot(path=str(shots / "home.png"))

    page.get_by_role("searchbox", name="Search observations").fill("phone")
    page.get_by_role("button", name="Search").click()
    page.wait_for_url("**/search?q=phone*")
    assert page.get_by_text("2 matching “phone”").is_visible()
    page.screenshot(path=str(shots / "search.png"))

    page.get_by_role("link", name=ACME).first.click()
    page.wait_for_url(f"**/entity/{ACME}")
    snapshot = page.locator("table.snapshot")
    assert "+44 20 7946 0000" in snapshot.inner_text() and "more specific (0.9 over 0.2)" in snapshot.inner_text()
    assert page.get_by_role("link", name="company/holding").first.is_visible()  # the neighbourhood
    page.screenshot(path=str(shots / "entity.png"), full_page=True)

    lost = page.locator("tr.lost").filter(has_text="+44 20 0000 0000")
    lost.get_by_role("link", name=obs_id(3)).click()
    page.wait_for_url(f"**/observation/{obs_id(3)}")
    assert page.get_by_role("heading", name="A guess of Acme's phone").is_visible()
    page.screenshot(path=str(shots / "observation.png"))

    page.get_by_role("link", name="review this commit").click()
    page.wait_for_url("**/diff/**")
    assert page.get_by_role("heading", name="Review").is_visible()
    assert page.get_by_text(f"{obs_id(3)} changes nothing").is_visible() or \
        page.get_by_role("link", name=obs_id(3)).first.is_visible()
    assert "1 observation added" in page.locator("main").inner_text()
    page.screenshot(path=str(shots / "diff.png"), full_page=True)
    assert watched.errors == []
    context.close()


def test_a_phone_never_scrolls_sideways_and_dark_mode_is_dark(browser, server, shots):
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark", device_scale_factor=1)
    watched = Watched(context)
    page = watched.page
    base = f"http://127.0.0.1:{server.port}"
    for path in ("/", "/search?q=phone", f"/entity/{ACME}", f"/observation/{obs_id(4)}"):
        page.goto(base + path)
        _no_sideways_scroll(page)
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    red, green, blue = (int(part) for part in background[background.index("(") + 1:-1].split(",")[:3])
    assert red + green + blue < 3 * 64, background  # a dark page in dark mode
    page.goto(base + f"/entity/{ACME}")
    page.screenshot(path=str(shots / "entity-phone-dark.png"), full_page=True)
    assert watched.errors == []
    context.close()


def test_a_click_on_a_non_ascii_entity_in_the_static_preview_lands_on_its_page(browser, make_repo, tmp_path, shots):
    """The preview opened from the file system, as a downloaded artifact is: a link to an entity
    whose key is not ASCII leads to its page (docs/design.md §8b)."""
    repo = make_repo()
    base = repo.commit("empty", allow_empty=True)
    repo.add(observation(obs_id(1), entity="company/café", fields={"name": "Café Zürich"}, event="A café opens"),
             observation(obs_id(2), entity="person/o'brien", fields={"name": "Ann O'Brien"},
                         relations=[{"type": "WORKS_AT", "target": "company/café"}]))
    head = repo.commit("a café and its owner")
    out = tmp_path / "preview"
    proc = repo.obsrepo("serve", "--static", str(out), f"{base}..{head}")
    assert proc.returncode == 0, proc.stderr
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    watched = Watched(context)
    page = watched.page
    page.goto((out / "index.html").as_uri())
    page.get_by_role("link", name="person/o'brien").first.click()
    page.wait_for_load_state()
    assert page.get_by_role("heading", name="person/o'brien").is_visible(), page.url
    page.get_by_role("link", name="company/café").first.click()
    page.wait_for_load_state()
    assert page.get_by_role("heading", name="company/café").is_visible(), page.url
    assert "Café Zürich" in page.locator("table.snapshot").inner_text()
    page.screenshot(path=str(shots / "preview-entity.png"))
    assert watched.errors == []
    context.close()
