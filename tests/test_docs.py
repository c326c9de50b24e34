"""The documentation site, opened in headless Chromium as a reader would (marked ``slow``).

Builds the site with ``sphinx-build -W`` unless ``BREGCLUST_DOCS_HTML`` points at a built one,
serves it on 127.0.0.1, opens the index, one API page and one gallery page, saves screenshots
under ``docs/_build/screenshots`` and checks the rendered DOM.
"""

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

_ERROR_MARKERS = ("Traceback", "WARNING", "Error:", "ERROR", "Exception occurred")


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    msg = ("headless Chromium not found (Debian: apt-get install -y chromium); the browser "
           "check of the documentation site needs it")
    if os.environ.get("BREGCLUST_REQUIRE_DATA") == "1":
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="module")
def site():
    built = os.environ.get("BREGCLUST_DOCS_HTML")
    if built:
        html = Path(built)
    else:
        pytest.importorskip("sphinx", reason="the docs extra is not installed")
        pytest.importorskip("sphinx_gallery", reason="the docs extra is not installed")
        html = REPO / "docs" / "_build" / "html"
        env = dict(os.environ, MPLBACKEND="Agg", OPENBLAS_NUM_THREADS="1")
        res = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
                              "html", str(REPO / "docs"), str(html)],
                             capture_output=True, text=True, env=env)
        assert res.returncode == 0, f"sphinx-build failed:\n{res.stdout}\n{res.stderr}"
    assert (html / "index.html").is_file(), f"no built site at {html}"
    return html


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=10)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


def _open(url, shot, tmp_path):
    """Screenshot ``url`` to ``shot`` and return its rendered DOM."""
    browser = _chromium()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--hide-scrollbars", "--window-size=1280,1600"]
    shot.parent.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([browser, *flags, f"--user-data-dir={tmp_path / 'shot'}",
                        f"--screenshot={shot}", url],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0 and shot.is_file() and shot.stat().st_size > 10_000, r.stderr
    r = subprocess.run([browser, *flags, f"--user-data-dir={tmp_path / 'dom'}",
                        "--virtual-time-budget=5000", "--dump-dom", url],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _text(dom):
    """Visible text of a DOM dump (scripts and styles removed)."""
    from html.parser import HTMLParser

    class P(HTMLParser):
        def __init__(self):
            super().__init__()
            self.skip = 0
            self.parts = []

        def handle_starttag(self, tag, attrs):
            self.skip += tag in ("script", "style")

        def handle_endtag(self, tag):
            self.skip -= tag in ("script", "style") and self.skip > 0

        def handle_data(self, data):
            if not self.skip:
                self.parts.append(data)

    p = P()
    p.feed(dom)
    return " ".join(p.parts)


def _check_clean(dom):
    text = _text(dom)
    for marker in _ERROR_MARKERS:
        assert marker not in text, f"{marker!r} in the rendered page"
    assert "system-message" not in dom  # docutils' rendering of a markup error


SHOTS = REPO / "docs" / "_build" / "screenshots"


def test_index_page_renders(server, tmp_path):
    dom = _open(f"{server}/index.html", SHOTS / "index.png", tmp_path)
    assert "<title>bregclust" in dom
    _check_clean(dom)
    for link in ("install.html", "guide/index.html", "auto_examples/index.html",
                 "api/index.html"):
        assert f'href="{link}' in dom


def test_api_page_renders(server, tmp_path):
    page = "api/generated/bregclust.mbc.MultitaskBregmanClustering.html"
    dom = _open(f"{server}/{page}", SHOTS / "api_mbc.png", tmp_path)
    assert "<title>MultitaskBregmanClustering" in dom
    _check_clean(dom)
    text = _text(dom)
    for section in ("Parameters", "Attributes", "relations_", "fit", "predict"):
        assert section in text
    assert 'id="bregclust.mbc.MultitaskBregmanClustering"' in dom


def test_gallery_page_renders(server, tmp_path, site):
    dom = _open(f"{server}/auto_examples/index.html", SHOTS / "gallery.png", tmp_path)
    assert "<title>Gallery of examples" in dom
    _check_clean(dom)
    thumbs = [line for line in dom.split("<img") if "sphx_glr_plot_" in line and "_thumb" in line]
    assert len(thumbs) >= 8
    for t in thumbs:  # every thumbnail is a real figure, not sphinx-gallery's placeholder
        src = t.split('src="', 1)[1].split('"', 1)[0]
        assert (site / "auto_examples" / src).is_file()
        assert "no_image" not in src
    dom = _open(f"{server}/auto_examples/plot_mbc_digits.html", SHOTS / "example_mbc.png",
                tmp_path)
    _check_clean(dom)
    assert "sphx_glr_plot_mbc_digits_001.png" in dom
