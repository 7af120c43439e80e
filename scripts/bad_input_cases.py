"""The cases of `scripts/probe_bad_inputs.py`: bad inputs of every command.

Each case is what a new user could give: a file that is not what a flag
takes, a flag value that means nothing, a setting that does not fit the run,
a path the operating system refuses; and, for the exported SavedModels,
requests a model server could receive. `cases(Case)` returns them; `{...}` in
an argument is filled by the probe (`{tmp}` the case's own directory, `{run}`
a tiny pre-training run, `{export}` its exports, `{vocab}` the bundled BERT
vocabulary, `{demo_vocab}` the demo one).
"""

from __future__ import annotations

import gzip
import json
import os
import pathlib

from scripts.tiny_run import tiny_hparams, tiny_run_flags

REPO = pathlib.Path(__file__).resolve().parents[1]

# The shared tiny run (`scripts/tiny_run.py`), 10 steps, on the built-in
# demo corpus; `RUN_FLAGS` without --hparams, for cases that give their own.
RUN_FLAGS = tiny_run_flags(steps=10)
TINY_RUN = [*RUN_FLAGS, *tiny_hparams()]
# A few documents of a few sentences (blank lines between documents).
SENTENCES = (
    "The committee met on Tuesday to discuss the budget.\n"
    "Several members asked for more time to read the report.\n"
    "The chair agreed and moved the vote to next week.\n"
)


def _text(tmp, name="corpus.txt", documents=40):
    path = tmp / name
    path.write_text("\n".join([SENTENCES] * documents), encoding="utf-8")
    return path


def _write(name, data: bytes):
    def setup(tmp):
        (tmp / name).write_bytes(data)

    return setup


def _unreadable(name="corpus.txt"):
    def setup(tmp):
        _text(tmp, name)
        os.chmod(tmp / name, 0)

    return setup


def _directory(name):
    def setup(tmp):
        (tmp / name).mkdir()
        (tmp / name / "a.txt").write_text(SENTENCES)

    return setup


def _file(name="afile"):
    def setup(tmp):
        (tmp / name).write_text("not a directory\n")
        _text(tmp)

    return setup


def _read_only_dir(name="readonly"):
    def setup(tmp):
        _text(tmp)
        (tmp / name).mkdir()
        os.chmod(tmp / name, 0o555)

    return setup


def _read_only_run(tmp):
    """The copied run, finished, made read-only (as a shared directory is)."""
    for path in [tmp / "run", *(tmp / "run").rglob("*")]:
        os.chmod(path, 0o555 if path.is_dir() else 0o444)


def _both(*setups):
    def setup(tmp):
        for one in setups:
            one(tmp)

    return setup


def _shards_without_stats(tmp):
    """The run's shards, copied without stats.json and vocab.txt."""
    (tmp / "shards").mkdir()
    for path in (tmp / "run" / "data").glob("train-*"):
        (tmp / "shards" / path.name).write_bytes(path.read_bytes())


def _unchanged(name):
    """A check: `name` in the case directory still holds what setup wrote."""

    def check(tmp):
        path = tmp / name
        if not path.exists():
            return f"{name} was deleted"
        if path.read_text(errors="replace") != SENTENCES:
            return f"{name} was overwritten"
        return None

    return check


def _sentences(tmp):
    (tmp / "in.txt").write_text(SENTENCES, encoding="utf-8")


def _same_special_ids_vocab(tmp):
    """BERT's tokens with the special tokens at the demo vocabulary's ids
    (0-4, as every vocabulary our learner writes), and the run's shards
    without their stats.json."""
    _shards_without_stats(tmp)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    bert = (REPO / "electra_tf" / "assets" / "vocab.txt").read_text().split("\n")
    tokens = specials + [t for t in bert if t and t not in specials]
    (tmp / "other_vocab.txt").write_text("".join(t + "\n" for t in tokens))


def _without_eval_shards(tmp):
    for path in (tmp / "run" / "data").glob("eval-*"):
        path.unlink()


def _truncated_shard(tmp):
    shard = sorted((tmp / "run" / "data").glob("train-*"))[0]
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) // 2])


def _config_unchanged(tmp):
    config = json.loads((tmp / "run" / "config.json").read_text())
    if config["pretraining"]["mask_prob"] != 0.15:
        return "config.json was rewritten with the new mask_prob"
    return None


def cases(Case) -> list:
    """Every case, built with the probe's `Case` class."""
    build, pre = "electra-build-data", "electra-pretrain"
    convert, score = "electra-convert", "electra-score"
    tune, demo = "electra-finetune", "electra-finetune-demo"
    out = ["--output-dir", "{tmp}/out", "--no-progress"]
    corpus = ["--input", "{tmp}/corpus.txt"]
    small = ["--vocab", "{vocab}"]
    pretrain_corpus = ["--corpus", "{tmp}/corpus.txt", "--vocab", "{vocab}"]
    hp = tiny_hparams()
    short = ["--seeds", "1", "--epochs", "1", "--max-seq-length", "32"]
    # A table of cases, one call each: kept as written.
    # fmt: off
    return [
        # === electra-build-data ===
        Case("build-empty", build, ["--input", "{tmp}/blank.txt", *out, *small],
             "error", "blank.txt", "empty corpus",
             setup=_write("blank.txt", b"  \n\n \n")),
        Case("build-latin1", build, ["--input", "{tmp}/l.txt", *out, *small],
             "error", "l.txt is not UTF-8", "not UTF-8",
             setup=_write("l.txt", "caf\u00e9 cr\u00e8me\n".encode("latin-1"))),
        Case("build-utf16", build, ["--input", "{tmp}/u.txt", *out, *small],
             "error", "u.txt", "binary / UTF-16",
             setup=_write("u.txt", "hello world\n".encode("utf-16"))),
        Case("build-bad-gzip", build, ["--input", "{tmp}/c.txt.gz", *out, *small],
             "error", "c.txt.gz", "corrupt gzip",
             setup=_write("c.txt.gz", gzip.compress(SENTENCES.encode())[:20])),
        Case("build-missing-input", build, ["--input", "{tmp}/nope.txt", *out, *small],
             "error", "nope.txt", "missing path"),
        Case("build-empty-dir", build, ["--input", "{tmp}/empty", *out, *small],
             "error", "empty", "directory with no files",
             setup=lambda tmp: (tmp / "empty").mkdir()),
        Case("build-unreadable-input", build, [*corpus, *out, *small],
             "error", "corpus.txt", "unreadable file (OS error)",
             setup=_unreadable(), unprivileged=True),
        Case("build-vocab-is-dir", build, [*corpus, *out, "--vocab", "{tmp}/v.csv"],
             "error", "v.csv", "directory where a file is expected (OS error)",
             setup=_both(_text, lambda tmp: (tmp / "v.csv").mkdir())),
        Case("build-unreadable-vocab", build,
             [*corpus, *out, "--vocab", "{tmp}/vocab.txt"],
             "error", "vocab.txt", "unreadable file (OS error)",
             setup=_both(_text, _unreadable("vocab.txt")), unprivileged=True),
        Case("build-output-is-file", build,
             [*corpus, "--output-dir", "{tmp}/afile", *small],
             "error", "afile", "file where a directory is expected (OS error)",
             setup=_file()),
        Case("build-output-under-file", build,
             [*corpus, "--output-dir", "{tmp}/afile/out", *small],
             "error", "afile", "file where a directory is expected (OS error)",
             setup=_file()),
        Case("build-output-read-only", build,
             [*corpus, "--output-dir", "{tmp}/readonly/out", *small],
             "error", "readonly", "read-only output directory (OS error)",
             setup=_read_only_dir(), unprivileged=True),
        Case("build-output-not-empty", build, [*corpus, *out, *small],
             "error", "out is not empty .*; pass --overwrite to replace",
             "output directory not empty",
             setup=_both(_text, _directory("out"))),
        Case("build-no-held-out", build,
             ["--input", "{tmp}/corpus.txt", *out, *small],
             "warning", "no document was held out", "corpus too small for held-out",
             setup=lambda tmp: _text(tmp, documents=2)),
        Case("build-tiny-vocab", build,
             [*corpus, *out, "--learn-vocab-size", "10"],
             "warning", r"\[UNK\]", "learned vocabulary of 10 pieces: mostly [UNK]",
             setup=_text),
        Case("build-long-line", build, [*corpus, *out, *small],
             "warning", r"corpus.txt, line 1: a line of", "a huge line, no newline",
             setup=_write("corpus.txt", ("word " * 60_000).encode())),
        Case("build-seq-100000", build, [*corpus, *out, *small,
                                         "--max-seq-length", "100000"],
             "warning", "longer than any preset's position table",
             "sequence length no preset reads", setup=lambda t: _text(t, documents=2)),
        Case("build-more-shards-than-examples", build,
             [*corpus, *out, *small, "--num-shards", "8", "--eval-fraction", "0"],
             "warning", "train examples for 8 train shards: the last",
             "more shards than examples: empty shards",
             setup=lambda tmp: _text(tmp, documents=2)),
        Case("build-vocab-is-text", build,
             [*corpus, *out, "--vocab", "{tmp}/corpus.txt"],
             "error", "corpus.txt is not a vocabulary", "a corpus given as --vocab",
             setup=_text),
        Case("build-seq-4", build, [*corpus, *out, *small, "--max-seq-length", "4"],
             "error", "max_seq_length", "sequence length too short", setup=_text),
        Case("build-shards-0", build, [*corpus, *out, *small, "--num-shards", "0"],
             "error", "num_shards", "non-positive count", setup=_text),
        Case("build-eval-fraction", build,
             [*corpus, *out, *small, "--eval-fraction", "1.5"],
             "error", "eval_fraction", "fraction out of range", setup=_text),
        Case("build-hosts", build, [*corpus, *out, *small, "--num-hosts", "3"],
             "error", "num-hosts", "shards not divisible by hosts", setup=_text),
        # === electra-pretrain: flags ===
        Case("pretrain-steps-0", pre, ["--model-dir", "{tmp}/m", "--steps", "0"],
             "error", "--steps", "non-positive count"),
        Case("pretrain-steps-negative", pre,
             ["--model-dir", "{tmp}/m", "--steps", "-5"],
             "error", "--steps", "non-positive count"),
        Case("pretrain-batch-0", pre, ["--model-dir", "{tmp}/m", "--batch-size", "0"],
             "error", "--batch-size", "non-positive count"),
        Case("pretrain-checkpoint-every-0", pre,
             ["--model-dir", "{tmp}/m", "--checkpoint-every", "0"],
             "error", "--checkpoint-every", "non-positive count"),
        Case("pretrain-learning-rate-0", pre,
             ["--model-dir", "{tmp}/m", "--learning-rate", "0"],
             "error", "--learning-rate", "non-positive count"),
        Case("pretrain-corpus-and-data", pre,
             ["--model-dir", "{tmp}/m", "--data", "{run}/data/train-*",
              "--corpus", "{tmp}/corpus.txt"],
             "error", "--corpus and --data", "--corpus ignored beside --data",
             setup=_text),
        Case("pretrain-seq-longer-than-positions", pre,
             ["--model-dir", "{tmp}/m", "--max-seq-length", "1024"],
             "error", "1024.*128", "sequence longer than the position table"),
        Case("pretrain-unknown-hparam", pre,
             ["--model-dir", "{tmp}/m", "--hparams", '{"mask_probability": 0.2}'],
             "error", "mask_probability", "unknown setting"),
        Case("pretrain-hparams-not-json", pre,
             ["--model-dir", "{tmp}/m", "--hparams", "{mask_prob: 0.2}"],
             "error", "--hparams", "invalid JSON"),
        Case("pretrain-unknown-preset", pre,
             ["--model-dir", "{tmp}/m", "--preset", "medium"],
             "error", "medium", "unknown preset"),
        # === electra-pretrain: data ===
        Case("pretrain-data-is-text", pre,
             ["--model-dir", "{tmp}/m", "--data", "{tmp}/corpus.txt", *RUN_FLAGS],
             "error", "--data.*corpus.txt", "--data given raw text", setup=_text),
        Case("pretrain-data-is-dir", pre,
             ["--model-dir", "{tmp}/m", "--data", "{run}/data", *RUN_FLAGS],
             "error", "--data.*data", "--data given a directory"),
        Case("pretrain-data-missing", pre,
             ["--model-dir", "{tmp}/m", "--data", "{tmp}/none/train-*", *RUN_FLAGS],
             "error", "none/train", "missing data"),
        Case("pretrain-shards-other-vocab", pre,
             ["--model-dir", "{tmp}/m", "--data", "{tmp}/shards/train-*",
              "--vocab", "{vocab}", *RUN_FLAGS, *hp],
             "error", "another vocabulary", "shards without stats.json, other vocab",
             copy_run=True, setup=_shards_without_stats),
        Case("pretrain-shards-same-special-ids", pre,
             ["--model-dir", "{tmp}/m", "--data", "{tmp}/shards/train-*",
              "--vocab", "{tmp}/other_vocab.txt", *RUN_FLAGS, *hp],
             "error", "another vocabulary that puts the special tokens at the same",
             "shards of another vocabulary whose special ids agree",
             copy_run=True, setup=_same_special_ids_vocab),
        Case("pretrain-data-without-eval", pre,
             ["--model-dir", "{tmp}/m", "--data", "{run}/data/train-*",
              *RUN_FLAGS, *hp],
             "warning", "has no held-out data .*writes no eval_results.json",
             "data without held-out shards: no evaluation",
             copy_run=True, setup=_without_eval_shards),
        Case("pretrain-truncated-shard", pre,
             ["--model-dir", "{tmp}/m", "--data", "{run}/data/train-*",
              *RUN_FLAGS, *hp],
             "error", r"train-\S+: truncated record at byte \d+[.;]",
             "a truncated shard", copy_run=True, setup=_truncated_shard),
        Case("pretrain-corpus-latin1", pre,
             ["--model-dir", "{tmp}/m", "--corpus", "{tmp}/l.txt", *RUN_FLAGS],
             "error", "l.txt is not UTF-8", "non-UTF-8 --corpus",
             setup=_write("l.txt", "caf\u00e9\n".encode("latin-1") * 50)),
        Case("pretrain-corpus-missing", pre,
             ["--model-dir", "{tmp}/m", "--corpus", "{tmp}/missing.txt"],
             "error", "missing.txt", "missing path"),
        Case("pretrain-corpus-csv-dir", pre,
             ["--model-dir", "{tmp}/m", "--corpus", "{tmp}/x.csv", "--vocab",
              "{vocab}", *RUN_FLAGS, *hp],
             "error", "x.csv", "directory named *.csv (OS error)",
             setup=lambda tmp: (tmp / "x.csv").mkdir()),
        Case("pretrain-corpus-unreadable", pre,
             ["--model-dir", "{tmp}/m", *pretrain_corpus, *RUN_FLAGS, *hp],
             "error", "corpus.txt", "unreadable file (OS error)",
             setup=_unreadable(), unprivileged=True),
        Case("pretrain-vocab-unreadable", pre,
             ["--model-dir", "{tmp}/m", "--corpus", "{tmp}/corpus.txt", "--vocab",
              "{tmp}/vocab.txt", *RUN_FLAGS, *hp],
             "error", "vocab.txt", "unreadable file (OS error)",
             setup=_both(_text, _unreadable("vocab.txt")), unprivileged=True),
        Case("pretrain-vocab-is-dir", pre,
             ["--model-dir", "{tmp}/m", "--corpus", "{tmp}/corpus.txt",
              "--vocab", "{tmp}/vocab.csv", *RUN_FLAGS, *hp],
             "error", "vocab.csv", "directory where a file is expected (OS error)",
             setup=_both(_text, lambda tmp: (tmp / "vocab.csv").mkdir())),
        Case("pretrain-init-checkpoint-missing", pre,
             ["--model-dir", "{tmp}/m", "--init-checkpoint", "{tmp}/ckpt-7",
              *RUN_FLAGS, *hp],
             "error", "ckpt-7", "missing checkpoint"),
        # === electra-pretrain: the model directory ===
        Case("pretrain-model-dir-under-file", pre,
             ["--model-dir", "{tmp}/afile/run", *RUN_FLAGS, *hp],
             "error", "afile", "file where a directory is expected (OS error)",
             setup=_file()),
        Case("pretrain-model-dir-is-file", pre,
             ["--model-dir", "{tmp}/afile", *RUN_FLAGS, *hp],
             "error", "afile", "file where a directory is expected (OS error)",
             setup=_file()),
        Case("pretrain-model-dir-read-only-new", pre,
             ["--model-dir", "{tmp}/readonly/run", *RUN_FLAGS, *hp],
             "error", "readonly", "read-only --model-dir, new (OS error)",
             setup=_read_only_dir(), unprivileged=True),
        Case("pretrain-model-dir-read-only-finished", pre,
             ["--model-dir", "{run}", *RUN_FLAGS, *hp],
             "error", "run", "read-only --model-dir, finished (OS error)",
             copy_run=True, setup=_read_only_run, unprivileged=True),
        Case("pretrain-model-dir-read-only-resuming", pre,
             ["--model-dir", "{run}", *tiny_run_flags(steps=20), *hp],
             "error", "run", "read-only --model-dir, resuming (OS error)",
             copy_run=True, setup=_read_only_run, unprivileged=True),
        # === electra-pretrain: resuming ===
        Case("pretrain-resume-other-mask-prob", pre,
             ["--model-dir", "{run}", *RUN_FLAGS, *tiny_hparams(mask_prob=0.3)],
             "error", "mask_prob 0.15, not 0.3", "resume with another --hparams",
             copy_run=True, check=_config_unchanged),
        Case("pretrain-resume-other-objective", pre,
             ["--model-dir", "{run}", *RUN_FLAGS, *hp, "--objective", "mlm"],
             "error", "objective 'electra', not 'mlm'", "resume with another objective",
             copy_run=True),
        Case("pretrain-resume-other-size", pre,
             ["--model-dir", "{run}", *RUN_FLAGS, *tiny_hparams(num_layers=2)],
             "error", "num_layers 1, not 2", "resume with another model size",
             copy_run=True),
        Case("pretrain-resume-other-batch", pre,
             ["--model-dir", "{run}", *tiny_run_flags(steps=10, batch_size=16), *hp],
             "error", "batch_size 8, not 16", "resume with another batch",
             copy_run=True),
        # === electra-pretrain: warnings (these train a few steps) ===
        Case("pretrain-batch-larger-than-data", pre,
             ["--model-dir", "{tmp}/m", *pretrain_corpus, "--steps", "2",
              "--checkpoint-every", "2", "--batch-size", "64", "--max-seq-length",
              "64", "--jit", "off", *hp],
             "warning", "fewer than one batch", "batch larger than the data",
             setup=lambda tmp: _text(tmp, documents=4)),
        # === electra-convert ===
        Case("convert-hf-missing", convert,
             ["hf-to-electra", "--discriminator", "{tmp}/nope", "--output",
              "{tmp}/out"],
             "error", "nope", "missing path"),
        Case("convert-hf-is-file", convert,
             ["hf-to-electra", "--discriminator", "{tmp}/afile", "--output",
              "{tmp}/out"],
             "error", "afile", "file where a directory is expected"),
        Case("convert-tf1-not-checkpoint", convert,
             ["tf1-to-electra", "--checkpoint", "{tmp}/corpus.txt", "--output",
              "{tmp}/out"],
             "error", "corpus.txt", "not a checkpoint", setup=_text),
        Case("convert-checkpoint-missing", convert,
             ["electra-to-hf", "--checkpoint", "{tmp}/ckpt-3", "--output",
              "{tmp}/out"],
             "error", "ckpt-3", "missing checkpoint"),
        Case("convert-output-under-file", convert,
             ["electra-to-keras-hub", "--checkpoint", "{run}/checkpoints",
              "--output", "{tmp}/afile/out"],
             "error", "afile", "file where a directory is expected (OS error)",
             setup=_file()),
        Case("convert-output-read-only", convert,
             ["electra-to-keras-hub", "--checkpoint", "{run}/checkpoints",
              "--output", "{tmp}/readonly/out"],
             "error", "readonly", "read-only output (OS error)",
             setup=_read_only_dir(), unprivileged=True),
        Case("convert-config-unreadable", convert,
             ["electra-to-hf", "--checkpoint", "{run}/checkpoints", "--config",
              "{tmp}/corpus.txt", "--output", "{tmp}/out"],
             "error", "corpus.txt", "unreadable file (OS error)",
             setup=_unreadable(), unprivileged=True),
        Case("convert-keras-hub-empty", convert,
             ["keras-hub-to-electra", "--preset", "{tmp}/empty", "--output",
              "{tmp}/out"],
             "error", "empty", "not a preset",
             setup=lambda tmp: (tmp / "empty").mkdir()),
        # === electra-score ===
        Case("score-input-missing", score,
             ["--model-dir", "{run}", "--input", "{tmp}/nope.txt", "--output",
              "{tmp}/o.tsv"],
             "error", "nope.txt", "missing path"),
        Case("score-input-is-dir", score,
             ["--model-dir", "{run}", "--input", "{tmp}/in.csv", "--output",
              "{tmp}/o.tsv"],
             "error", "in.csv", "directory named *.csv (OS error)",
             setup=lambda tmp: (tmp / "in.csv").mkdir()),
        Case("score-input-unreadable", score,
             ["--model-dir", "{run}", "--input", "{tmp}/corpus.txt", "--output",
              "{tmp}/o.tsv"],
             "error", "corpus.txt", "unreadable file (OS error)",
             setup=_unreadable(), unprivileged=True),
        Case("score-output-is-input", score,
             ["--model-dir", "{run}", "--input", "{tmp}/in.txt", "--output",
              "{tmp}/in.txt"],
             "error", "in.txt", "--output overwrites --input (data loss)",
             setup=_sentences, check=_unchanged("in.txt")),
        Case("score-output-under-file", score,
             ["--model-dir", "{run}", "--input", "{tmp}/in.txt", "--output",
              "{tmp}/afile/o.tsv"],
             "error", "afile", "file where a directory is expected (OS error)",
             setup=_both(_file(), _sentences)),
        Case("score-output-read-only", score,
             ["--model-dir", "{run}", "--input", "{tmp}/in.txt", "--output",
              "{tmp}/readonly/o.tsv"],
             "error", "readonly", "read-only output (OS error)",
             setup=_both(_read_only_dir(), _sentences), unprivileged=True),
        Case("score-output-folder-missing", score,
             ["--model-dir", "{run}", "--input", "{tmp}/in.txt", "--output",
              "{tmp}/no/o.tsv"],
             "error", r"cannot write \S+/no/o\.tsv: (?!.*\.tmp-)",
             "output in a missing folder (names it, not a temporary file)",
             setup=_sentences),
        Case("score-batch-0", score,
             ["--model-dir", "{run}", "--input", "{tmp}/in.txt", "--output",
              "{tmp}/o.tsv", "--batch-size", "0"],
             "error", "batch", "non-positive count", setup=_sentences),
        Case("score-saved-model-dir", score,
             ["--model-dir", "{export}/saved_model", "--input", "{tmp}/in.txt",
              "--output", "{tmp}/o.tsv"],
             "error", "saved_model", "the wrong export given", setup=_sentences),
        Case("score-model-dir-missing", score,
             ["--model-dir", "{tmp}/nope", "--input", "{tmp}/in.txt", "--output",
              "{tmp}/o.tsv"],
             "error", "nope", "missing path", setup=_sentences),
        Case("score-input-latin1", score,
             ["--model-dir", "{run}", "--input", "{tmp}/l.txt", "--output",
              "{tmp}/o.tsv"],
             "error", "l.txt", "not UTF-8",
             setup=_write("l.txt", "caf\u00e9\n".encode("latin-1"))),
        # === electra-finetune, electra-finetune-demo: OS errors ===
        Case("finetune-train-file-is-csv-dir", tune,
             ["--train-file", "{tmp}/train.csv", "--dev-file", "{tmp}/train.csv",
              "--pretrained", "none", "--output-dir", "{tmp}/out"],
             "error", "train.csv", "directory named *.csv (OS error)",
             setup=lambda tmp: (tmp / "train.csv").mkdir()),
        Case("finetune-train-file-is-dir", tune,
             ["--train-file", "{tmp}/data", "--dev-file", "{tmp}/data",
              "--pretrained", "none", "--output-dir", "{tmp}/out"],
             "error", "data is a directory", "a directory without an extension",
             setup=_directory("data")),
        Case("finetune-unknown-task", tune,
             ["--task", "ner", "--pretrained", "none", "--output-dir", "{tmp}/out"],
             "error", "'ner'.*tagging, squad1, squad2, mrqa", "unknown --task"),
        Case("finetune-train-file-unreadable", tune,
             ["--train-file", "{tmp}/train.csv", "--dev-file", "{tmp}/train.csv",
              "--pretrained", "none", "--output-dir", "{tmp}/out"],
             "error", "train.csv", "unreadable file (OS error)",
             setup=_unreadable("train.csv"), unprivileged=True),
        Case("finetune-output-under-file", tune,
             ["--train-file", "{tmp}/train.csv", "--dev-file", "{tmp}/train.csv",
              "--pretrained", "none", "--output-dir", "{tmp}/afile/out"],
             "error", "afile", "file where a directory is expected (OS error)",
             setup=_both(_file(), _write("train.csv", _LABELLED))),
        Case("finetune-demo-data-dir-is-file", demo,
             ["--data-dir", "{tmp}/afile", "--pretrained", "{export}/discriminator",
              "--output-dir", "{tmp}/out", *short],
             "error", "afile", "file where a directory is expected (OS error)",
             setup=_file()),
        Case("finetune-demo-output-read-only", demo,
             ["--pretrained", "{export}/discriminator", "--output-dir",
              "{tmp}/readonly/out", *short],
             "error", "readonly", "read-only output (OS error)",
             setup=_read_only_dir(), unprivileged=True),
        # === the exported SavedModels ===
        *_serving_cases(Case),
    ]
    # fmt: on


_LABELLED = b"text,label\n" + b"".join(
    f"a fine film number {i},{i % 2}\n".encode() for i in range(40)
)


def _serving_cases(Case) -> list:
    model, scorer = "{export}/saved_model", "{export}/sentence_scorer"

    def call(name, path, signature, inputs, expect, pattern, what):
        return Case(
            name,
            "serving",
            [path, signature, json.dumps(inputs)],
            expect,
            pattern,
            what,
        )

    ids = [[2, 10, 11, 3]]
    mask = [[1, 1, 1, 1]]
    segments = [[0, 0, 0, 0]]
    pair = "detect_replaced_tokens_text_pair"
    text = "detect_replaced_tokens_text"
    id_signature = "detect_replaced_tokens_ids"
    # fmt: off
    return [
        call("serve-pair-sizes-differ", model, pair,
             {"text": ["string", ["a b", "c d"]], "text_pair": ["string", ["e"]]},
             "error", "text_pair", "pair batches of different sizes"),
        call("serve-pair-sizes-differ-3-1", model, pair,
             {"text": ["string", ["a", "b", "c"]], "text_pair": ["string", ["x"]]},
             "error", "text_pair", "pair batches of different sizes"),
        call("serve-pair-first-empty", model, pair,
             {"text": ["string", []], "text_pair": ["string", ["x"]]},
             "error", "text_pair", "pair batches of different sizes"),
        call("serve-text-empty-batch", model, text, {"text": ["string", []]},
             "answer", r"\[0", "empty batch"),
        call("serve-pair-empty-batch", model, pair,
             {"text": ["string", []], "text_pair": ["string", []]},
             "answer", r"\[0", "empty batch"),
        call("serve-scorer-empty-batch", scorer, "score_sentences",
             {"text": ["string", []]}, "answer", r"\[0", "empty batch"),
        call("serve-ids-wrong-dtype", model, id_signature,
             {"token_ids": ["int64", ids], "padding_mask": ["int32", mask],
              "segment_ids": ["int32", segments]},
             "error", "token_ids", "wrong dtype"),
        call("serve-ids-float", model, id_signature,
             {"token_ids": ["float32", ids], "padding_mask": ["int32", mask],
              "segment_ids": ["int32", segments]},
             "error", "token_ids", "wrong dtype"),
        call("serve-text-given-ints", model, text, {"text": ["int32", [1, 2]]},
             "error", r"\btext\b", "wrong dtype"),
        call("serve-ids-shapes-differ", model, id_signature,
             {"token_ids": ["int32", ids], "padding_mask": ["int32", [[1, 1]]],
              "segment_ids": ["int32", segments]},
             "error", "padding_mask", "inputs of different shapes"),
        call("serve-ids-outside-vocabulary", model, id_signature,
             {"token_ids": ["int32", [[2, 999999, 3]]],
              "padding_mask": ["int32", [[1, 1, 1]]],
              "segment_ids": ["int32", [[0, 0, 0]]]},
             "error", "999999", "token id outside the vocabulary"),
        call("serve-ids-longer-than-positions", model, id_signature,
             {"token_ids": ["int32", [[2] * 300]],
              "padding_mask": ["int32", [[1] * 300]],
              "segment_ids": ["int32", [[0] * 300]]},
             "error", "token_ids is longer than the 128 positions",
             "longer than the position table"),
        call("serve-text-rank-2", model, text, {"text": ["string", [["a", "b"]]]},
             "error", r"\btext\b", "wrong shape"),
    ]
    # fmt: on


if __name__ == "__main__":
    raise SystemExit("run python -m scripts.probe_bad_inputs")
