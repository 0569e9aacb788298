"""A Sphinx extension for the book's weight and console.

- MathJax served from the build itself (math renders offline), but only the parts a page can
  load: the single component ``tex-chtml.js`` with its CommonHTML fonts, and the TeX extensions
  it autoloads (``\\boldsymbol``, ``\\color``, ...): 2.1 MB instead of the whole 24 MB
  distribution (the speech-rule engine ``sre/`` and the explorer that needs it, the SVG and
  MathML outputs and the ``*-full`` bundles are never loaded by a page). The files come from
  the installed ``sphinx-mathjax-offline`` package (MathJax 3).
- Nothing a browser never fetches: the theme's translation catalogs (``_static/locales``, used
  only by Sphinx at build time) and the TrueType copies of the icon fonts whose WOFF2 versions
  come first in the theme's CSS.
- Icons once: the theme ships Font Awesome twice, as CSS with web fonts (inside its own
  stylesheet, every icon class the pages use) and as the 1.5 MB script ``fontawesome.js`` that
  swaps each icon for an inline SVG. The CSS alone draws the same icons, so the script and its
  ``<script>`` tag are dropped (a tenth of the site's weight).
- No source maps: ``*.map`` files are removed from the build and the ``sourceMappingURL``
  comments that point at them stripped (a reader's browser never needs them).
- Each script once: sphinx-thebe adds its inline configuration (``const THEBE_JS_URL = ...``)
  once with filename None and once with '' (sphinx-togglebutton's too), so a page carried it
  twice and logged "Identifier 'THEBE_JS_URL' has already been declared". Duplicate scripts are dropped from every page.
- The theme's default colour mode set ("auto"), so a first visit logs no "invalid theme mode".
- Notebooks to take away with their outputs: the download button's ``.ipynb`` (the page's
  ``_sources/<chapter>.ipynb``) is the executed notebook, as the page shows it (outputs, figures;
  no stderr, as ``nb_output_stderr: remove`` keeps it off the page), not the committed one
  without outputs.
- The one-page build (`make pdf`'s singlehtml) draws hidden cells as the pages do.
- Launch and repository buttons only for a real repository: they appear when ``_config.yml``'s
  ``repository.url`` is set, and not at all while it is empty (a button to a repository that does
  not exist would be a dead link).

- Small screens: long inline code (``a_long_function_name(...)``) wraps instead of pushing the
  page wider than a phone; display equations scroll inside their own box, and so do wide
  tables (a cell's output, a table of the text), whatever the theme's version (``book.css``).
- Printed output wraps from tablet width up: a line a cell prints past the column (a command, a
  file's provenance) breaks at the column's edge instead of hiding its end behind a scroll bar;
  on a phone it scrolls, so that printed columns stay aligned. Result tables are set at 0.9 of
  the text's size, which brings most of them within the column at 1280 px.
- Code inside a box (an exercise's solution, a dropdown) is set at 0.86 of its size: the box's
  padding leaves 617 px of the column's 686, and a line of the book's 74 characters then fits
  whole instead of scrolling.

Loaded from ``_config.yml`` (``sphinx.local_extensions``).
"""

from __future__ import annotations

import re
import shutil
from importlib.util import find_spec
from pathlib import Path

# MathJax paths (relative to its distribution folder) a page may load.
# tex-chtml.js already holds the menu (ui/menu) and a11y/assistive-mml; the other a11y modules
# (explorer, semantic enrichment) need the 3.9 MB speech-rule engine and are left out with it.
MATHJAX_PARTS = ("tex-chtml.js", "output/chtml/fonts/woff-v2", "input/tex/extensions")


def mathjax_source() -> Path:
    spec = find_spec("sphinx-mathjax-offline")
    if spec is None or spec.origin is None:
        raise RuntimeError("MathJax files not found: install sphinx-mathjax-offline (requirements.txt)")
    return Path(spec.origin).parent / "static" / "mathjax"


def copy_mathjax(app, exc) -> None:
    if exc is not None or app.builder.format != "html":
        return
    src, dst = mathjax_source(), Path(app.outdir) / "_static" / "mathjax"
    if dst.exists():
        shutil.rmtree(dst)
    for part in MATHJAX_PARTS:
        s, d = src / part, dst / part
        d.parent.mkdir(parents=True, exist_ok=True)
        if s.is_dir():  # all-packages.js bundles every extension for the tex-full components; tex-chtml's
            # autoload fetches a page's extensions one by one, so the 215 kB bundle is never loaded
            shutil.copytree(s, d, ignore=shutil.ignore_patterns("*.map", "all-packages.js"))
        else:
            shutil.copy2(s, d)


_MAP_COMMENT = re.compile(r"\n?(//# sourceMappingURL=\S+|/\*# sourceMappingURL=\S+ \*/)\s*$")


def drop_source_maps(app, exc) -> None:
    if exc is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    shutil.rmtree(static / "locales", ignore_errors=True)
    for ttf in static.rglob("*.ttf"):
        if ttf.with_suffix(".woff2").is_file():
            ttf.unlink()
    for f in static.rglob("*.map"):
        f.unlink()
    for f in [*static.rglob("*.js"), *static.rglob("*.css")]:
        text = f.read_text(errors="surrogateescape")
        new = _MAP_COMMENT.sub("", text)
        if new != text:
            f.write_text(new, errors="surrogateescape")


_FONTAWESOME_JS = re.compile(r'<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>\s*')


def drop_fontawesome_js(app, exc) -> None:
    if exc is not None or app.builder.format != "html":
        return
    (Path(app.outdir) / "_static" / "scripts" / "fontawesome.js").unlink(missing_ok=True)
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        new = _FONTAWESOME_JS.sub("", text)
        if new != text:
            page.write_text(new, encoding="utf-8")


def shrink_images(app, exc) -> None:
    """Figures as 256-colour PNGs when that is smaller: matplotlib's plots and the book's image grids
    use few colours, so the palette keeps them legible at about half the bytes (the site stays light
    for readers on slow connections; tests/test_site.py bounds its weight)."""
    if exc is not None or app.builder.format != "html":
        return
    from PIL import Image

    for f in (Path(app.outdir) / "_images").glob("*.png"):
        before = f.stat().st_size
        with Image.open(f) as im:
            im.load()
            small = im.convert("RGBA").quantize(256, method=Image.Quantize.FASTOCTREE)
        tmp = f.with_suffix(".tmp.png")
        small.save(tmp, optimize=True)
        if tmp.stat().st_size < before:
            tmp.replace(f)
        else:
            tmp.unlink()


def _dedupe(scripts: list) -> None:
    seen, kept = set(), []
    for js in scripts:
        attrs = getattr(js, "attributes", {}) or {}
        key = (str(getattr(js, "filename", js) or ""), attrs.get("body"), tuple(sorted((k, str(v)) for k, v in attrs.items())))
        if key in seen:
            continue
        seen.add(key)
        kept.append(js)
    scripts[:] = kept


def dedupe_builder_scripts(app, env) -> None:
    # After every source is read (sphinx-thebe adds its scripts then), before any page is written.
    if hasattr(app.builder, "_js_files"):
        _dedupe(app.builder._js_files)


def dedupe_page_scripts(app, pagename, templatename, context, doctree) -> None:
    if context.get("script_files"):
        _dedupe(context["script_files"])


BOOK_CSS = """/* tools/book_assets.py: the book's own rules for small screens */
.bd-article code.literal, .bd-article code.literal span.pre { white-space: normal; overflow-wrap: anywhere; }
.bd-article mjx-container[display="true"] { display: block; overflow-x: auto; overflow-y: hidden; max-width: 100%; }
.bd-article div.cell_output .output, .bd-article .pst-scrollable-table-container { max-width: 100%; overflow-x: auto; }
@media (min-width: 768px) { .bd-article div.cell_output pre { white-space: pre-wrap; overflow-wrap: anywhere; } }
.bd-article div.cell_output table { font-size: 0.9em; }
.bd-article .admonition div.cell div.cell_input pre, .bd-article details div.cell div.cell_input pre { font-size: 0.86em; }
"""


def write_css(app, exc) -> None:
    if exc is None and app.builder.format == "html":
        (Path(app.outdir) / "_static" / "book.css").write_text(BOOK_CSS)


def theme_mode(app, config) -> None:
    # pydata-sphinx-theme logs "Got invalid theme mode" on a reader's first visit when the
    # default mode is left empty.
    # (pydata-sphinx-theme reads it from html_context).
    config.html_context = {**(config.html_context or {})}
    config.html_context.setdefault("default_mode", "auto")


def repository_buttons(app, config) -> None:
    """The launch buttons (Binder, a JupyterHub) and the repository button point at
    ``repository.url``: with it empty, neither is shown."""
    options = dict(config.html_theme_options or {})
    if str(options.get("repository_url") or "").strip():
        options.setdefault("use_repository_button", True)
    else:
        options.pop("repository_url", None)
        options["use_repository_button"] = False
        options["launch_buttons"] = {}
    config.html_theme_options = options


def _executed(app, docname: str):
    """The notebook ``docname`` as the page shows it: its execution from the book's jupyter-cache
    (myst-nb's own copy in ``_build/jupyter_execute`` holds no outputs when the page was read from
    the cache), else that copy when it has outputs; None when neither does."""
    import nbformat

    config = getattr(app.env, "mystnb_config", None)
    source = nbformat.read(app.env.doc2path(docname), as_version=4)
    cache = str(getattr(config, "execution_cache_path", "") or "")
    if cache and (Path(cache) / "global.db").is_file():
        from jupyter_cache import get_cache

        try:
            return get_cache(cache).merge_match_into_notebook(source)[1]
        except KeyError:
            pass
    run = Path(getattr(config, "output_folder", "") or Path(app.outdir).parent / "jupyter_execute") / f"{docname}.ipynb"
    if run.is_file():
        nb = nbformat.read(run, as_version=4)
        if any(c.get("outputs") for c in nb.cells if c.cell_type == "code"):
            return nb
    return None


def executed_notebooks(app, exc) -> None:
    """Put each executed notebook where the page's download button points,
    ``_sources/<docname>.ipynb``, without stderr outputs (as on the page)."""
    if exc is not None or app.builder.format != "html":
        return
    import nbformat

    sources = Path(app.outdir) / "_sources"
    for docname in sorted(app.env.found_docs):
        dst = sources / f"{docname}.ipynb"
        if not str(app.env.doc2path(docname)).endswith(".ipynb") or not dst.is_file():
            continue
        nb = _executed(app, docname)
        if nb is None:
            continue
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = [o for o in cell.outputs
                                if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]
        dst.write_text(nbformat.writes(nb), encoding="utf-8")


def singlehtml_handlers(app) -> None:
    """The singlehtml builder (`make pdf`) draws every node the html builder draws. Sphinx looks a
    translator's node handlers up by the builder's name and falls back to its format ("html")
    only when no extension registered any for that name; sphinx-exercise registers its nodes
    for "singlehtml" too, so myst-nb's hidden-cell node (registered for "html" only) stopped the
    build ("unknown node type: HideCodeCellNode"). The html handlers fill the gaps."""
    if app.builder.name != "singlehtml":
        return
    handlers = app.registry.translation_handlers
    single = handlers.setdefault("singlehtml", {})
    for node, visit_depart in handlers.get("html", {}).items():
        single.setdefault(node, visit_depart)


def declare_multitoc_parallel_safe(app) -> None:
    """sphinx-external-toc (1.1.0) always loads sphinx-multitoc-numbering, which does not declare
    whether Sphinx may read in parallel, so `sphinx-build -j 2` falls back to a serial read with a
    warning (an error under -W): executablebooks/sphinx-multitoc-numbering#27,
    sphinx-external-toc#115, both open. Its ``setup`` only replaces
    ``TocTreeCollector.assign_section_numbers``, which Sphinx calls once, in the main process,
    after every document is read: it keeps no state of its own during the read, so it is safe."""
    ext = app.extensions.get("sphinx_multitoc_numbering")
    if ext is not None and ext.parallel_read_safe is None:
        ext.parallel_read_safe = True


def setup(app):
    declare_multitoc_parallel_safe(app)
    app.connect("config-inited", theme_mode)
    app.connect("config-inited", repository_buttons)
    app.connect("builder-inited", singlehtml_handlers)
    app.connect("build-finished", executed_notebooks)
    app.add_css_file("book.css", priority=900)
    app.connect("build-finished", write_css)
    app.config.mathjax_path = "mathjax/tex-chtml.js"
    app.connect("env-updated", dedupe_builder_scripts, priority=900)
    # Early: html-page-context stops at the first listener that returns a template name.
    app.connect("html-page-context", dedupe_page_scripts, priority=100)
    app.connect("build-finished", copy_mathjax)
    app.connect("build-finished", drop_source_maps)
    app.connect("build-finished", shrink_images)
    app.connect("build-finished", drop_fontawesome_js)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
