"""`jackpot report`'s document on paper (R1, R6): the PDF Chromium prints from report.html, turned
into page images by poppler's ``pdftoppm`` and read back by ``pdftotext``.

The judges: the cover is a page of its own and each pot group starts a page; the page count
poppler reads equals the images it draws and every page's footer says "Página N de M"; nothing is
wider than the paper (Chromium shrinks the whole document to fit a wider table, and past its
limit also cuts it at the margin, so the cover's title printed smaller than its font size is the
sign), shown refusing a page with such a table; the last 25 prizes are in the text and the
earlier ones only in the annex, whose name, row count and SHA-256 (that of the file beside the
PDF) the cover prints (R1); and the Spanish document says nothing in English.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

import pytest

from jackpot.tools.report_document import (
    TITLE_PT,
    DocumentError,
    ReportSettings,
    find_browser,
    print_pdf,
    write_document,
)
from jackpot.tools.report_figures import compute
from jackpot.tools.report_model import Period, Report
from tests.levels_ledgers import levels_ledger
from tests.unit.test_report import START_NS, as_records, ledger

pytestmark = pytest.mark.integration

DPI = 50
PGM_MAGIC = b"P" + b"5"  # a binary grey image (spelt apart: it is not a rule's id)
ENGLISH = re.compile(
    r"\b(the|of|and|from|to|period|pots?|collected|commission|awarded|prizes?|reconciles?|"
    r"table|seat|round|paid|approved|opening|closing|received|verified|page)\b",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def report() -> Report:
    hours = 3 * 3600 * 10**9
    return compute(as_records(ledger(120)), Period(START_NS, START_NS + hours))


def printed(folder: Path, report: Report, lang: str = "es") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_document(folder, report, ReportSettings(casino="Casino Test", lang=lang), pdf=True)
    return folder / "report.pdf"


def pages_of(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True)
    return int(re.search(r"^Pages:\s+(\d+)", info.stdout, re.MULTILINE).group(1))  # type: ignore[union-attr]


def text_of(pdf: Path, page: int) -> str:
    command = ["pdftotext", "-f", str(page), "-l", str(page), "-layout", str(pdf), "-"]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def page_images(pdf: Path, folder: Path) -> list[Path]:
    """Every page as a grey image (PGM) at DPI."""
    prefix = folder / "page"
    subprocess.run(["pdftoppm", "-gray", "-r", str(DPI), str(pdf), str(prefix)], check=True)
    return sorted(folder.glob("page-*.pgm"))


def grey(image: Path) -> tuple[int, int, bytes]:
    """Width, height and the pixels of a binary 8-bit PGM."""
    data = image.read_bytes()
    magic, width, height, depth, pixels = data.split(maxsplit=4)
    assert (magic, depth) == (PGM_MAGIC, b"255")
    return int(width), int(height), pixels


def title_scale(pdf: Path) -> float:
    """The cover title's height over its font size: below 1 when Chromium shrank the pages to
    fit content wider than the paper (it scales the whole document, so every page shows it)."""
    command = ["pdftotext", "-bbox", "-f", "1", "-l", "1", str(pdf), "-"]
    boxes = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    found = re.search(r'yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">Informe<', boxes)
    assert found, "the cover's title is not on page 1"
    return (float(found.group(2)) - float(found.group(1))) / TITLE_PT


def test_R1_the_pdf_has_a_cover_a_page_per_group_numbered_pages_and_no_table_cut(
    report: Report, tmp_path: Path
) -> None:
    pdf = printed(tmp_path / "es", report)
    count = pages_of(pdf)
    images = page_images(pdf, tmp_path / "es")
    assert len(images) == count >= 1 + len(report.groups)
    assert all(min(grey(image)[2]) < 128 for image in images)  # no blank page
    texts = [text_of(pdf, n) for n in range(1, count + 1)]
    for number, text in enumerate(texts, start=1):
        assert f"Página {number} de {count}" in text
    cover = texts[0]
    assert "Informe del pozo progresivo" in cover
    assert "Casino Test" in cover
    assert "cuadran en este período (M2)" in cover
    assert "America/Santiago (UTC−04:00)" in cover  # the period is in May: Chilean winter time
    assert re.search(r"sha256:[0-9a-f]{64}, verificado\s+contra\s+su\s+manifiesto\s+\(R6\)", cover)
    assert "Grupo de pozos report-group" not in cover  # the group begins its own page
    assert texts[1].lstrip().startswith("Grupo de pozos report-group")
    assert title_scale(pdf) >= 1.0  # nothing wider than the paper (no table cut or shrunk)
    whole = "".join(texts)
    (group,) = report.groups
    assert group.awards == group.last_awards  # fewer than 25: every one
    for award in group.last_awards:
        assert award.round_id in whole
    assert "$250.000" in whole  # amounts as the floor writes them
    data = {"opening", "report-group", "reserve1", "scj-poker"}  # the ledger's own words
    words = {m.group(0).lower() for m in ENGLISH.finditer(whole)} - data
    assert words == set(), f"English on the Spanish document: {sorted(words)}"


def test_R1_the_pdf_lists_the_last_25_prizes_and_prints_the_annexs_digest(tmp_path: Path) -> None:
    """A period of more than 25 prizes: the last 25 are on paper, the earlier ones only in the
    annex, whose rows and SHA-256 (that of the file beside the PDF) the cover prints."""
    whole = compute(as_records(ledger(120)), Period(0, 2**62))
    pdf = printed(tmp_path / "annex", whole)
    (group,) = whole.groups
    assert len(group.awards) > len(group.last_awards) == 25
    text = "".join(text_of(pdf, n) for n in range(1, pages_of(pdf) + 1))
    shown = [a for a in group.awards if re.search(rf"{re.escape(a.round_id)}\b", text)]
    assert shown == group.last_awards
    digest = hashlib.sha256((pdf.parent / "awards.csv").read_bytes()).hexdigest()
    annex = re.search(r"awards\.csv: ([\d.]+) filas.*?SHA-256\s+([0-9a-f]{64})", text, re.S)
    assert annex, "the cover does not name its annex"
    assert annex.groups() == (str(len(group.awards)), digest)
    assert title_scale(pdf) >= 1.0


def test_the_judges_refuse_a_table_wider_than_the_page_and_an_english_document(
    report: Report, tmp_path: Path
) -> None:
    folder = tmp_path / "wide"
    printed(folder, report)
    page = folder / "report.html"
    wide = "<table style='width:400mm'><tr><td>" + "ancho " * 200 + "</td></tr></table>"
    page.write_text(page.read_text().replace("</body>", wide + "</body>"))
    folder_pdf = folder / "wide.pdf"
    print_pdf(page, folder_pdf, find_browser())
    assert title_scale(folder_pdf) < 0.9  # Chromium shrank every page to fit the wide table
    wider = wide.replace("400mm", "1200mm")  # beyond what it shrinks: also cut at the margin
    page.write_text(page.read_text().replace(wide, wider))
    print_pdf(page, folder_pdf, find_browser())
    assert title_scale(folder_pdf) < 0.9
    english = printed(tmp_path / "en", report, lang="en")
    found = {m.group(0).lower() for m in ENGLISH.finditer(text_of(english, 1))}
    assert {"period", "verified", "page"} <= found


def test_L1_V1_a_levels_groups_pdf_has_its_levels_table_and_chart_whole_on_the_paper(
    tmp_path: Path,
) -> None:
    """L1-L4, V1: a group with levels prints its levels table (each level's opening, collected,
    prizes, envy, refills, closing) and chart, envy bonuses by name, in Spanish, nothing wider
    than the paper."""
    levels = compute(as_records(levels_ledger().ledger), Period(0, 2**62))
    pdf = printed(tmp_path / "levels", levels)
    whole = "".join(text_of(pdf, n) for n in range(1, pages_of(pdf) + 1))
    assert "Niveles (L1-L4)" in whole
    assert "Cada nivel en el período" in whole
    assert "Envidias pagadas (V1)" in whole
    assert "Envidia: Escalera real" in whole
    assert "Royal Flush (royal)" in whole
    assert "$99.825" in whole  # the sf level refilled by the house
    assert title_scale(pdf) >= 1.0


def _fake_browser(tmp_path: Path, deaths: int) -> Path:
    """A browser that dies of SIGSEGV its first ``deaths`` times, then prints a one-line PDF."""
    browser = tmp_path / "chromium"
    count = tmp_path / "runs"
    browser.write_text(
        "#!/bin/sh\n"
        f'echo run >> "{count}"\n'
        f'if [ "$(wc -l < "{count}")" -le {deaths} ]; then kill -SEGV $$; fi\n'
        'for a in "$@"; do case "$a" in\n'
        '  --print-to-pdf=*) echo "%PDF-1.4" > "${a#*=}";;\n'
        "esac; done\n"
    )
    browser.chmod(0o755)
    return browser


def test_a_browser_killed_while_printing_prints_again_once_and_a_second_death_is_refused(
    tmp_path: Path,
) -> None:
    page, pdf = tmp_path / "report.html", tmp_path / "report.pdf"
    page.write_text("<html></html>")
    print_pdf(page, pdf, str(_fake_browser(tmp_path, deaths=1)))
    assert pdf.read_text().startswith("%PDF")
    assert (tmp_path / "runs").read_text().count("run") == 2
    (tmp_path / "runs").unlink()
    pdf.unlink()
    with pytest.raises(DocumentError, match=r"exit -11"):
        print_pdf(page, pdf, str(_fake_browser(tmp_path, deaths=2)))
    assert not pdf.exists()
    assert (tmp_path / "runs").read_text().count("run") == 2  # once again, not more
