"""BatchView below the browser: mime bundles, widget traits, paging messages, static HTML."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vizdebug as vd
from vizdebug import _env

EVIL = "<img src=x onerror=alert(1)>"


@pytest.fixture
def loader(digits_std):
    x, y = digits_std
    ds = torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y))
    return torch.utils.data.DataLoader(ds, batch_size=32, shuffle=False)


def test_mime_bundle_per_renderer(loader):
    view = vd.show_batch(loader)
    try:
        _env.set_renderer("text")
        assert set(view._repr_mimebundle_()) == {"text/plain"}
        _env.set_renderer("html")
        bundle = view._repr_mimebundle_()
        assert "vd-cell" in bundle["text/html"] and "widget-view" not in str(bundle.keys())
        _env.set_renderer("widget")
        bundle = view._repr_mimebundle_()
        model_id = bundle["application/vnd.jupyter.widget-view+json"]["model_id"]
        assert model_id == view.widget.model_id
        assert "text/html" in bundle  # the static fallback travels with the widget
    finally:
        _env.set_renderer(None)


def test_renderer_env_override(monkeypatch):
    monkeypatch.setenv("VIZDEBUG_RENDERER", "text")
    assert _env.renderer() == "text"
    monkeypatch.setenv("VIZDEBUG_RENDERER", "bogus")
    with pytest.raises(ValueError, match="VIZDEBUG_RENDERER"):
        _env.renderer()


def test_grid_counts_labels_and_flags(loader):
    view = vd.show_batch(loader, classes=[f"digit {i}" for i in range(10)])
    html = view.pages[0].html
    assert html.count('class="vd-cell') == 32
    assert "digit 0" in html and 'data-flags=""' in html
    assert view.findings.at_least("warning") == []


def test_paging_reads_batches_lazily_and_widget_follows(loader):
    view = vd.show_batch(loader)
    w = view.widget
    sent = []
    w.send = sent.append  # the custom messages the kernel sends the browser
    assert len(w.pages) == 1 and w.count == 1 and w.more and w.page == 0
    view._on_message({"type": "more"})  # what the browser's Next button sends
    assert w.count == 2 and w.page == 1 and view.page == 1
    assert len(w.pages) == 1  # the state keeps the first page; the new one went alone:
    assert [(m["start"], len(m["html"])) for m in sent] == [(1, 1)]
    assert 'data-page="1"' in sent[0]["html"][0]
    view._on_message({"type": "resend", "start": 0})  # a reloaded page lacks them all
    assert sent[-1]["start"] == 0 and len(sent[-1]["html"]) == 2
    w.page = 0  # the browser pages back; the kernel side follows
    assert view.page == 0
    view.next()
    assert view.page == 1 and len(view.pages) == 2  # reused, not re-read
    for _ in range(100):
        view.next()
    assert len(view.pages) == 57 and not view.more and not w.more  # 1797 / 32
    assert view.previous().page == 55


def test_loader_errors_surface_in_the_widget_not_the_kernel():
    class Broken(torch.utils.data.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            return (torch.rand(1, 8, 8), 0) if i < 4 else None

    view = vd.show_batch(torch.utils.data.DataLoader(Broken(), batch_size=4))
    view._on_message({"type": "more"})
    assert "check_dataset" in view.widget.status and not view.widget.more
    with pytest.raises(vd.VizdebugError, match="NoneType|None"):
        vd.show_batch(torch.utils.data.DataLoader(Broken(), batch_size=8))


def test_dataset_source_shows_none_samples_as_flagged_cells():
    class Sometimes(torch.utils.data.Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            return None if i == 2 else (torch.rand(1, 8, 8), i % 3)

    view = vd.show_batch(Sometimes())
    assert view.findings.codes == ["input-none"]
    assert view.findings[0].evidence["indices"] == [2]


def test_class_names_and_captions_are_escaped():
    view = vd.show_batch((torch.rand(4, 3, 8, 8), torch.tensor([0, 1, 0, 1])),
                         classes=["cat", EVIL])
    for html in (view.to_html(), view.widget.pages[0]):
        assert EVIL not in html
        assert "&lt;img src=x onerror=alert(1)&gt;" in html
    dict_view = vd.show_batch((torch.rand(2, 1, 8, 8), [EVIL, "ok"]))
    assert EVIL not in dict_view.to_html()


def test_static_html_has_all_captured_pages_and_paging_script(loader, tmp_path):
    view = vd.show_batch(loader).next().next()
    html = view.to_html()
    assert html.count('class="vd-static-page"') == 3 and "vdPage_" in html
    out = view.save(tmp_path / "batch.html")
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_payload_is_small_for_big_images():
    view = vd.show_batch(torch.rand(64, 3, 224, 224))
    assert len(view.to_html()) < 2_000_000
    assert "image/jpeg" in view.pages[0].html


def test_tiny_images_are_upscaled_crisply(digits_std):
    html = vd.show_batch(torch.tensor(digits_std[0][:8])).pages[0].html
    assert 'class="vd-crisp"' in html and 'width="128"' in html


def test_show_batch_does_not_disturb_the_training_order(digits_std):
    x, y = digits_std

    def first_labels(peek):
        g = torch.Generator().manual_seed(0)
        ld = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)),
            batch_size=16, shuffle=True, generator=g)
        torch.manual_seed(1)
        if peek:
            vd.show_batch(ld)
        return next(iter(ld))[1].tolist(), torch.rand(1).item()

    assert first_labels(False) == first_labels(True)


def test_findings_of_the_page_on_show():
    good = torch.rand(8, 1, 8, 8)
    bad = torch.zeros(8, 1, 8, 8)
    view = vd.show_batch([(good, torch.zeros(8)), (bad, torch.zeros(8))])
    assert view.findings.codes == []
    assert view.next().findings.codes == ["blank-images"]
    assert np.all(view.pages[1].flags[k] == ["blank"] for k in range(8))


def test_loader_with_worker_processes(digits_std):
    x, y = digits_std
    ds = torch.utils.data.TensorDataset(torch.tensor(x[:256]), torch.tensor(y[:256]))
    loader = torch.utils.data.DataLoader(ds, batch_size=64, num_workers=2)
    view = vd.show_batch(loader).next()
    assert [p.n_items for p in view.pages] == [64, 64]
    assert view.findings.at_least("warning") == []


# -- issue 10: thin images, classes, tables with repeated names, report arguments -------------

@pytest.mark.parametrize("shape", [(4, 1, 200), (2, 1, 1, 300), (2, 1, 300, 1), (1, 1, 1, 1),
                                   (2, 3, 1, 1), (2, 1, 2, 1000)])
def test_thin_images_and_strips_are_drawn_visibly(shape):
    import re

    html = vd.show_batch(np.random.rand(*shape)).pages[0].html
    sizes = [(int(w), int(h)) for w, h in re.findall(r'<img[^>]* width="(\d+)" height="(\d+)"', html)]
    assert sizes and all(min(s) >= 4 and max(s) <= 128 for s in sizes)


@pytest.mark.parametrize("classes", [5, "cat", 2.5, object()])
def test_classes_of_the_wrong_kind_are_refused_by_name(classes):
    with pytest.raises(vd.errors.VizdebugTypeError, match="classes must be a list"):
        vd.show_batch((torch.rand(4, 3, 8, 8), torch.arange(4)), classes=classes)


def test_classes_as_any_sequence_or_mapping():
    x, y = torch.rand(4, 3, 8, 8), torch.arange(4)
    for classes in (("a", "b", "c", "d"), np.array(["a", "b", "c", "d"]), range(4), {0: "a"}):
        assert vd.show_batch((x, y), classes=classes).pages[0].n_items == 4


def test_table_with_repeated_column_names():
    import pandas as pd

    frame = pd.DataFrame(np.random.rand(5, 3), columns=["a", "a", EVIL])
    html = vd.show_batch(frame).pages[0].html
    assert html.count("<td>a</td>") == 2 and EVIL not in html
    assert vd.check_batch(frame).codes == []


def test_report_arguments_are_checked(tmp_path):
    view = vd.show_batch(np.random.rand(4, 1, 8, 8))
    with pytest.raises(vd.errors.VizdebugTypeError, match="needs a path"):
        vd.report(view, None)
    with pytest.raises(vd.errors.VizdebugTypeError, match="title must be a string"):
        vd.report(view, tmp_path / "r.html", title=3)
    out = vd.report(view, tmp_path / "r.html", title=None)
    assert "<title>vizdebug report</title>" in out.read_text()
    with pytest.raises(vd.VizdebugError, match="cannot write the report"):
        vd.report(view, tmp_path / "r.html" / "below-a-file.html")


# -- issue 10: segmentation masks beside their images, multi-hot labels as sets ----------------

def _segmentation(n=8, size=16):
    g = torch.Generator().manual_seed(0)
    images = torch.rand(n, 3, size, size, generator=g)
    masks = torch.randint(0, 3, (n, size, size), generator=g)
    return images, masks


def test_masks_are_drawn_beside_their_images():
    images, masks = _segmentation()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, masks),
                                         batch_size=4)
    for source in (loader, (images, masks), list(zip(images, masks)),
                   (images, masks[:, None].float()), {"image": images, "mask": masks}):
        html = vd.show_batch(source, classes=["bg", EVIL, "dog"]).pages[0].html
        assert html.count('class="vd-crisp vd-mask"') == vd.show_batch(source).pages[0].n_items
        assert "mask: bg, &lt;img" in html and EVIL not in html
    assert vd.check_batch((images, masks)).codes == []
    assert vd.check_batch(next(iter(loader))).codes == []


def test_a_float_target_image_is_not_a_mask():
    images, _ = _segmentation()
    html = vd.show_batch((images, torch.rand(8, 16, 16))).pages[0].html
    assert "vd-mask" not in html


def test_multi_hot_labels_are_shown_as_sets_not_argmax():
    x = torch.rand(4, 3, 8, 8)
    y = torch.tensor([[1, 0, 1], [0, 1, 1], [0, 1, 0], [0, 0, 0]]).float()
    html = vd.show_batch((x, y), classes=["cat", "dog", EVIL]).pages[0].html
    labels = [c.split("</span>")[0] for c in html.split('class="vd-label">')[1:]]
    assert labels == ["{cat, &lt;img src=x onerror=alert(1)&gt;}", "{dog, &lt;img src=x "
                      "onerror=alert(1)&gt;}", "{dog}", "{}"]
    one_hot = torch.eye(3)[[0, 2, 1, 0]]
    assert "{" not in vd.show_batch((x, one_hot)).pages[0].html.split("vd-label")[1][:20]
    assert vd.check_batch((torch.rand(16, 3, 8, 8), torch.ones(16, 3))).codes == []
