"""The documentation site, opened in headless Chromium as a reader would (marked ``slow``).

Builds the site with ``sphinx-build -W`` unless ``BREGCLUST_DOCS_HTML`` points at a built one,
serves it on 127.0.0.1 (recording every request, so a test can tell which files the browser
loaded), opens the home page, API pages, the gallery and every gallery example, saves
screenshots under ``docs/_build/screenshots`` and checks the rendered DOM: every figure present,
loaded by the browser and not blank, formulas typeset by the MathJax served with the site, no
request leaving the site, no raw reST on any page.
"""

import functools
import http.server
import os
import posixpath
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
    handler = functools.partial(_RecordingHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=10)


#: ``(path, status)`` of every request the test server answered.
REQUESTS = []


class _RecordingHandler(http.server.SimpleHTTPRequestHandler):
    def log_request(self, code="-", size="-"):
        REQUESTS.append((self.path.split("?", 1)[0], int(getattr(code, "value", code))))

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


def _open(url, shot, tmp_path):
    """Screenshot ``url`` to ``shot`` and return its rendered DOM (after scripts ran)."""
    browser = _chromium()
    # --host-resolver-rules: any host other than the test server fails to resolve, so a page
    # that needs the internet (a CDN) shows it instead of silently working online.
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--hide-scrollbars", "--window-size=1280,1600",
             "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
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


# ----------------------------------------------------------------------------- as a reader sees it
def _gallery_pages(site):
    return sorted((site / "auto_examples").glob("plot_*.html"))


def _served(path):
    """The status the test server answered for ``path`` (None when it was never requested)."""
    found = [code for p, code in REQUESTS if p == path]
    return found[-1] if found else None


def _blank(png):
    import matplotlib.image as mpimg

    img = mpimg.imread(png)
    return img.ndim < 2 or float(img[..., :3].std()) < 0.02


def test_every_gallery_figure_is_present_loaded_and_not_blank(server, tmp_path, site):
    import re

    pages = _gallery_pages(site)
    assert len(pages) >= 10, [p.name for p in pages]
    names = {p.stem for p in pages}
    assert "plot_dask_scaleout" in names  # the docs environment installs the dask extra
    for page in pages:
        dom = _open(f"{server}/auto_examples/{page.name}",
                    SHOTS / "gallery" / f"{page.stem}.png", tmp_path)
        _check_clean(dom)
        srcs = re.findall(r'<img[^>]*src="\.\./(_images/sphx_glr_[^"]+\.png)"', dom)
        figures = [s for s in srcs if "_thumb" not in s]
        assert figures, f"{page.name} shows no figure"
        for src in figures:
            f = site / src
            assert f.is_file(), f"{page.name}: {src} is missing from the site"
            assert not _blank(f), f"{page.name}: {src} is blank"
            assert _served(f"/{src}") == 200, f"{page.name}: the browser did not load {src}"


def test_gallery_thumbnails_are_real_figures(server, tmp_path, site):
    dom = _open(f"{server}/auto_examples/index.html", SHOTS / "gallery_index.png", tmp_path)
    thumbs = [t.split('src="', 1)[1].split('"', 1)[0] for t in dom.split("<img")[1:]
              if "sphx_glr_plot_" in t and "_thumb" in t]
    assert len(thumbs) == len(_gallery_pages(site))
    for src in thumbs:
        path = posixpath.normpath(posixpath.join("/auto_examples", src))
        assert "no_image" not in src
        assert not _blank(site / path.lstrip("/")), src
        assert _served(path) == 200, f"the browser did not load {path}"


def test_formulas_are_typeset_offline(server, tmp_path):
    REQUESTS.clear()
    dom = _open(f"{server}/guide/mbc.html", SHOTS / "guide_mbc.png", tmp_path)
    _check_clean(dom)
    assert "mjx-container" in dom, "MathJax did not typeset the formulas"
    assert "\\(" not in _text(dom), "a formula is left as TeX source"
    assert _served("/_static/mathjax/tex-chtml.js") == 200
    assert "cdn.jsdelivr.net" not in dom and "mathjax@" not in dom


def test_home_page_shows_a_figure_and_what_the_library_is_for(server, tmp_path, site):
    REQUESTS.clear()
    dom = _open(f"{server}/index.html", SHOTS / "home.png", tmp_path)
    _check_clean(dom)
    text = _text(dom)
    for words in ("What it is for", "Clustering with any Bregman divergence",
                  "Clustering related data sets together", "Data larger than memory"):
        assert words in text, words
    src = "_images/sphx_glr_plot_divergence_balls_001.png"
    assert f'src="{src}"' in dom and _served(f"/{src}") == 200 and not _blank(site / src)
    for link in ("citing.html", "changelog.html"):
        assert f'href="{link}' in dom


def test_api_pages_show_the_examples_that_use_them(site):
    backrefs = site.parent.parent / "api" / "generated" / "backreferences"
    if not backrefs.is_dir():  # a site given by BREGCLUST_DOCS_HTML without its sources
        pytest.skip(f"no backreferences next to the site ({backrefs})")
    used = {f.name[:-len(".examples")] for f in backrefs.glob("*.examples")
            if f.stat().st_size > 0}
    pages = {p.stem: p for p in (site / "api" / "generated").glob("bregclust.*.html")}
    checked = 0
    for name, page in pages.items():
        short = "bregclust." + name.rsplit(".", 1)[-1]
        if name in used or short in used:
            html = page.read_text()
            assert "Examples using" in html and "sphx-glr-thumbcontainer" in html, name
            checked += 1
    assert checked >= 10, (checked, sorted(used))


def test_kernel_mtc_pages_list_inherited_methods(site):
    page = (site / "api" / "generated" / "bregclust.kernel_mtc.NonparametricKernelMTC.html")
    html = page.read_text()
    for method in ("fit", "fit_predict", "predict", "get_params", "set_params"):
        assert f'id="bregclust.kernel_mtc.NonparametricKernelMTC.{method}"' in html, method
    assert "task" in html.split('id="bregclust.kernel_mtc.NonparametricKernelMTC.predict"')[1][:2000]


def test_links_to_python_numpy_scipy_sklearn_and_pot(site):
    html = "".join(p.read_text() for p in [
        site / "api" / "generated" / "bregclust.kmeans.BregmanKMeans.html",
        site / "guide" / "mbc.html", site / "guide" / "kmeans.html",
        site / "guide" / "agglomerative.html"])
    for url in ("https://docs.python.org/3/", "https://numpy.org/doc/stable/reference/generated/"
                "numpy.ndarray.html", "https://docs.scipy.org/doc/scipy/reference/generated/",
                "https://scikit-learn.org/stable/modules/generated/sklearn.cluster.KMeans.html",
                "https://pythonot.github.io/gen_modules/ot.lp.html#ot.lp.emd"):
        assert f'href="{url}' in html, url


def test_no_page_shows_raw_rest(site):
    import re
    from html.parser import HTMLParser

    class Visible(HTMLParser):  # text outside code, scripts and styles
        def __init__(self):
            super().__init__()
            self.skip = 0
            self.parts = []

        def handle_starttag(self, tag, attrs):
            self.skip += tag in ("script", "style", "pre", "code")

        def handle_endtag(self, tag):
            self.skip -= tag in ("script", "style", "pre", "code") and self.skip > 0

        def handle_data(self, data):
            if not self.skip:
                self.parts.append(data)

    raw = re.compile(r"(:[a-z]+:`|``|`[^`]+`_|^\.\. [a-z-]+::)", re.MULTILINE)
    found = []
    for page in sorted(site.rglob("*.html")):
        if {"_modules", "_sources", "_static"} & set(page.relative_to(site).parts):
            continue
        p = Visible()
        p.feed(page.read_text())
        m = raw.search("\n".join(p.parts))
        if m:
            found.append(f"{page.relative_to(site)}: {m.group(0)!r}")
    assert found == []


def test_citing_and_changelog_pages(server, tmp_path):
    dom = _open(f"{server}/citing.html", SHOTS / "citing.png", tmp_path)
    _check_clean(dom)
    text = _text(dom)
    for author in ("Banerjee", "Zhang and C. Zhang", "Telgarsky", "Gu, Z. Li and J. Han",
                   "Gu and J. Zhou", "Liu and J. Luo"):
        assert author in text, author
    dom = _open(f"{server}/changelog.html", SHOTS / "changelog.png", tmp_path)
    _check_clean(dom)
    assert "0.1.0" in _text(dom)
