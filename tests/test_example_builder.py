"""Packing rules: layout, no token lost, determinism, the original proportions."""

import numpy as np

from electra_tf.data.example_builder import ExampleBuilder

CLS, SEP, PAD = 2, 3, 0
L = 32


def _documents(seed, count=60):
    rng = np.random.default_rng(seed)
    next_id = 10
    documents = []
    for _ in range(count):
        sentences = []
        for _ in range(int(rng.integers(1, 12))):
            # Mostly short sentences, sometimes one longer than an example.
            length = int(rng.integers(1, 80 if rng.random() < 0.1 else 15))
            sentences.append(list(range(next_id, next_id + length)))
            next_id += length
        documents.append(sentences)
    return documents


def _build(documents, seed=0):
    builder = ExampleBuilder(L, CLS, SEP, PAD, seed=seed)
    return [builder.add_document(document) for document in documents]


def test_layout_and_no_token_lost():
    documents = _documents(0)
    for document, examples in zip(documents, _build(documents)):
        stream = [t for sentence in document for t in sentence]
        rebuilt = []
        for ids, mask, segments in examples:
            assert ids.shape == mask.shape == segments.shape == (L,)
            real = int(mask.sum())
            assert mask[:real].all() and not mask[real:].any()
            assert (ids[real:] == PAD).all() and (segments[real:] == 0).all()
            body = ids[:real]
            assert body[0] == CLS and body[-1] == SEP
            seps = np.flatnonzero(body == SEP)
            assert len(seps) in (1, 2)
            # Segment 0 covers [CLS] A [SEP]; segment 1 covers B [SEP].
            assert (segments[: seps[0] + 1] == 0).all()
            assert (segments[seps[0] + 1 : real] == 1).all()
            rebuilt += [t for t in body if t not in (CLS, SEP)]
        assert rebuilt == stream


def test_deterministic_for_a_seed():
    documents = _documents(1)
    a, b, c = _build(documents, 7), _build(documents, 7), _build(documents, 8)
    flat = lambda runs: [e.input_ids.tobytes() for run in runs for e in run]  # noqa: E731
    assert flat(a) == flat(b)
    assert flat(a) != flat(c)


def test_single_segment_share_and_short_targets():
    examples = [e for run in _build(_documents(2, count=400)) for e in run]
    single = np.mean([(e.input_ids == SEP).sum() == 1 for e in examples])
    # 10% by rule, plus examples whose text ran out before B (document ends).
    assert 0.08 < single < 0.6
    full = np.mean([e.input_mask.sum() >= L - 3 for e in examples])
    assert full > 0.3
