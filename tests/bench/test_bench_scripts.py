"""Benchmark scripts: `--help` stays cheap; every worker starts and steps; a dead
worker shows its stderr; the transformers peer masks as we do."""

import json
import pathlib
import subprocess
import sys
import types

import numpy as np
import pytest

from tests.helpers import CLS, MASK, PAD, SEP, SUBPROCESS_TIMEOUT, random_batch

REPO = pathlib.Path(__file__).parents[2]


@pytest.mark.parametrize(
    "module, flags",
    [
        (
            "suite.pretrain_throughput",
            ["--implementations", "--memory-batch-size", "--precision"],
        ),
        ("suite.serving_latency", ["--batch-size", "--tsv", "--classifier", "--core"]),
        ("suite.litert_tagging", ["--tagger", "--test-conll"]),
        ("suite.step_time", ["--variants", "uniform_generator", "auto"]),
        ("suite.matmul_peak", ["--rows", "--rounds"]),
        ("suite.help_time", ["--checkout", "--label", "--rounds"]),
        ("suite.data_throughput", ["--processes"]),
        (
            "suite.finetune_throughput",
            ["--tasks", "--task-dir", "--core", "--precision"],
        ),
        ("studies.paper_experiments", ["--report-from", "--seeds-of", "--jobs"]),
        (
            "suite.finetune_faithfulness",
            ["--pretrained", "--arms", "--rt-polarity-dir", "--threads"],
        ),
    ],
)
def test_help_lists_the_flags(module, flags):
    # `python -m bench.<module> --help` from the repository root, and the
    # modules loaded once it has printed: it must stay cheap.
    probe = (
        "import runpy, sys\n"
        f"sys.argv = ['bench.{module}', '--help']\n"
        "try:\n"
        f"    runpy.run_module('bench.{module}', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('heavy:', sorted({'tensorflow', 'torch'} & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=SUBPROCESS_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    for flag in flags:
        assert flag in result.stdout
    assert "heavy: []" in result.stdout


def test_default_task_data_is_the_repositorys_own():
    """No default reads a path of one machine (it was ../shared/data/tasks)."""
    from bench.studies import paper_experiments
    from bench.suite import finetune_throughput

    task_dir = pathlib.Path(finetune_throughput.parse_args([]).task_dir)
    study = paper_experiments.parse_args([])
    for data in (pathlib.Path(study.pos_dir), task_dir / "brown_pos"):
        assert data.resolve().is_relative_to(REPO.resolve())
        assert (data / "train.conll").is_file()
    sentiment = pathlib.Path(study.sentiment_dir)
    assert sentiment.resolve().is_relative_to(REPO.resolve())
    assert (sentiment / "test.tsv").is_file()
    assert (task_dir / "rt_polarity" / "train.tsv").is_file()


def test_the_transformers_peer_masks_by_our_rule(tiny_configs):
    """Same count per example, never a special or padding position, ~85% [MASK]."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import tensorflow as tf
    import torch

    from bench.hf_peer import HfElectraPretraining
    from electra_tf import random_streams
    from electra_tf.pretraining.masking import mask_tokens

    model, pretraining = tiny_configs
    vocabulary = types.SimpleNamespace(
        size=model.vocabulary_size, pad_id=PAD, cls_id=CLS, sep_id=SEP, mask_id=MASK
    )
    batch = random_batch(batch_size=64, length=pretraining.max_seq_length)
    peer = HfElectraPretraining(model, pretraining, vocabulary)
    masked_ids, labels, chosen = peer._mask(
        torch.from_numpy(batch["token_ids"]).long(),
        torch.from_numpy(batch["padding_mask"]).long(),
    )
    ours = mask_tokens(
        batch["token_ids"],
        batch["padding_mask"],
        key=random_streams.step_key(0, 0),
        example_index=tf.range(64),
        mask_prob=pretraining.mask_prob,
        max_predictions=pretraining.max_predictions_per_seq,
        mask_token_prob=pretraining.mask_token_prob,
        mask_token_id=MASK,
        special_token_ids=(PAD, CLS, SEP, MASK),
    )
    chosen = chosen.numpy()
    assert (chosen.sum(-1) == ours.weights.numpy().sum(-1)).all()
    special = np.isin(batch["token_ids"], (CLS, SEP)) | (batch["padding_mask"] == 0)
    assert not (chosen & special).any()
    assert (labels.numpy()[chosen] == batch["token_ids"][chosen]).all()
    shown = (masked_ids.numpy() == MASK)[chosen].mean()
    assert abs(shown - pretraining.mask_token_prob) < 0.06
    # Its loss is ELECTRA's: the generator's MLM loss plus 50 x the RTD loss
    # (at initialisation ~log V + 50 x ~0.69, far above the MLM loss alone).
    loss = peer.train_step({k: v[:8] for k, v in batch.items()})
    assert pretraining.resolved_disc_weight == 50.0
    assert loss > 20.0 + np.log(model.vocabulary_size) * 0.5, loss


# --- Worker processes: every benchmark's workers start, import and step -------
# (issue 32: a worker started by file path could not import `bench`, and its
# stderr went nowhere). From another directory, without PYTHONPATH: the
# benchmark itself must put the repository on the worker's path. The default
# suite starts every worker and peer with a bad number, which its argument
# parser rejects once the module (and `bench`, which it imports first) has
# loaded; the slow tests take one tiny step in each (each test over 30 s on
# two busy cores: TensorFlow's and PyTorch's imports, tracing).


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    return tmp_path


@pytest.fixture(scope="module")
def tiny_shards(tmp_path_factory):
    from electra_tf.data.tfrecord_writer import build_pretraining_data
    from electra_tf.data.vocabulary import BUNDLED_VOCABULARY, Vocabulary

    data_dir = tmp_path_factory.mktemp("shards")
    build_pretraining_data(
        [str(REPO / "tests" / "fixtures" / "corpus_excerpt.txt")],
        Vocabulary.from_file(BUNDLED_VOCABULARY),
        str(data_dir),
        max_seq_length=16,
        num_shards=1,
        num_eval_shards=0,
        eval_fraction=0.0,
        progress=False,
    )
    return str(data_dir / "train-*")


@pytest.mark.slow
def test_pretrain_throughput_workers_take_a_step(tiny_shards, elsewhere):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from bench.suite import pretrain_throughput as bench

    args = bench.parse_args(["--data", tiny_shards, "--preset", "tiny"])
    _, vocabulary, _ = bench._describe(args)
    batches = str(elsewhere / "batches.npz")
    bench._write_batches(args, batches, 2, 1, vocabulary)
    # `ours_graph`: our worker's path without an XLA compilation to wait for.
    workers = [
        bench.Worker(name, args, 2, 1, batches)
        for name in ("ours_graph", "transformers_1_thread")
    ]
    try:
        for worker in workers:  # both start at once; each steps in turn
            timing = worker.ask("steps")
            assert timing["wall"] > 0 and timing["cpu"] > 0, worker.name
            assert worker.ask("rss")["peak_rss_gib"] > 0
    finally:
        for worker in workers:
            worker.stop()
    assert [w.process.process.returncode for w in workers] == [0, 0]


@pytest.mark.slow
def test_serving_latency_servers_answer(elsewhere):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("tensorflow_text")
    from bench.suite import serving_latency as bench

    args = bench.parse_args(["--preset", "tiny", "--max-seq-length", "16"])
    export_dir = str(elsewhere / "export")
    # The peer starts while ours is exported.
    servers = [bench.Server("transformers_1_thread", args, export_dir)]
    try:
        bench.export_ours(args.preset, args.max_seq_length, export_dir)
        servers.append(bench.Server("ours", args, export_dir))
        for server in servers:
            assert server.seconds(["a fine, funny film ."]) > 0, server.name
    finally:
        for server in servers:
            server.stop()
    assert [s.process.process.returncode for s in servers] == [0, 0]


@pytest.mark.slow
def test_serving_latency_compact_servers_answer_and_score(elsewhere):
    pytest.importorskip("torch")
    pytest.importorskip("ai_edge_litert")
    import keras
    import keras_hub

    from bench.suite import serving_latency as bench
    from electra_tf.models.encoder import ElectraEncoder
    from electra_tf.models.text_classifier import ElectraTextClassifier
    from electra_tf.models.text_classifier_preprocessor import (
        ElectraTextClassifierPreprocessor,
    )
    from electra_tf.presets import get_preset

    keras.utils.set_random_seed(0)
    vocab = REPO / "electra_tf" / "assets" / "vocab.txt"
    tokenizer = keras_hub.models.ElectraTokenizer(vocabulary=str(vocab), lowercase=True)
    config = get_preset("tiny").model.override(
        vocabulary_size=30522, max_sequence_length=16
    )
    classifier = ElectraTextClassifier(
        ElectraEncoder.discriminator_from_config(config),
        num_classes=2,
        preprocessor=ElectraTextClassifierPreprocessor(tokenizer, sequence_length=16),
        pooling="mean",
    )
    classifier.save(elsewhere / "classifier.keras")
    test = elsewhere / "test.tsv"
    test.write_text("sentence\tlabel\nA fine, funny film .\t1\ndull\t0\nOK\t1\n")
    export_dir = elsewhere / "export"
    sizes = bench.export_compact(str(elsewhere / "classifier.keras"), str(export_dir))
    assert sizes["litert_int8"] < sizes["litert_float32"]
    args = bench.parse_args(["--max-seq-length", "16", "--core", "0"])
    servers = [
        bench.Server(name, args, str(export_dir)) for name in bench.COMPACT_SERVERS
    ]
    try:
        scores = {server.name: server.score(str(test)) for server in servers}
        for server in servers:
            assert server.seconds(["a fine, funny film ."]) > 0, server.name
    finally:
        for server in servers:
            server.stop()
    assert all(score in (0, 1 / 3, 2 / 3, 1) for score in scores.values()), scores
    # The same weights and tokens: the same labels in float32.
    assert scores["litert_float32"] == scores["saved_model"] == scores["torch_float32"]


def test_every_worker_starts_and_a_dead_one_shows_its_stderr(elsewhere):
    from bench.suite import finetune_throughput, pretrain_throughput, serving_latency
    from bench.worker_process import WorkerDied, WorkerProcess

    args = pretrain_throughput.parse_args(["--data", "x", "--preset", "tiny"])
    workers = [
        pretrain_throughput.Worker(name, args, "two", 1, "x.npz")
        for name in pretrain_throughput.IMPLEMENTATIONS
    ]
    args = finetune_throughput.parse_args(["--preset", "tiny"])
    args.steps = "two"
    workers += [
        finetune_throughput.Worker(name, "qa", args)
        for name in finetune_throughput.IMPLEMENTATIONS
    ]
    args = serving_latency.parse_args(["--preset", "tiny"])
    args.max_seq_length = "long"
    workers += [
        serving_latency.Server(name, args, "x") for name in serving_latency.SERVERS
    ]
    for worker in workers:
        worker.process.process.wait()  # dead before it is asked: a broken pipe
        with pytest.raises(WorkerDied) as error:
            if isinstance(worker, serving_latency.Server):
                worker.seconds(["a sentence"])
            else:
                worker.ask("steps")
        message = str(error.value)
        assert message.startswith(f"the {worker.name} worker died (exit code 2)")
        assert "invalid int value: " in message, message
        worker.stop()

    # Asked while it dies (the end of its stdout), and what issue 32's worker
    # hid: the import that failed, as its stderr's last line.
    process = WorkerProcess("broken", "bench.no_such_module", [])
    with pytest.raises(WorkerDied) as error:
        process.receive()
    assert "(exit code 1)" in str(error.value)
    assert str(error.value).endswith("No module named bench.no_such_module")
    process.stop()


# --- finetune_throughput: every task on both sides, one tiny step -------------


def _finetune_args(*extra):
    from bench.suite import finetune_throughput as bench

    return bench.parse_args(
        # 64: the peer's QA windows need room for a question and the stride.
        ["--preset", "tiny", "--max-seq-length", "64", "--batch-size", "2"]
        + ["--warmup-steps", "1", "--steps", "1", "--rounds", "1", *extra]
    )


def _serve_one_step(implementation, task, *extra):
    from bench.suite import finetune_throughput as bench

    replies = []
    trainer = bench.make_trainer(implementation, task, _finetune_args(*extra))
    trainer.serve(["warmup", "steps"], replies.append)
    assert len(replies) == 2, (implementation, task)
    assert all(r["wall"] > 0 and r["cpu"] > 0 for r in replies)
    # The positions of the batches timed.
    assert all(r["positions"] >= r["real"] > 0 for r in replies)
    return trainer


@pytest.mark.parametrize("task", ["classification", "tagging", "qa"])
def test_finetune_throughput_peer_takes_a_step_in_every_task(task):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    _serve_one_step("transformers", task)


def test_finetune_throughput_ours_takes_a_step():
    # Our classifier in graph mode; the other tasks and XLA in the slow test.
    _serve_one_step("ours_graph", "classification")


def test_finetune_throughput_profiles_our_step():
    # A traced turn replies with its timing and each op group's share of the
    # op time: matmuls and the optimizer among them, the shares adding to 1.
    from bench.suite import finetune_throughput as bench

    replies = []
    trainer = bench.make_trainer("ours_graph", "classification", _finetune_args())
    trainer.serve(["warmup", "profile"], replies.append)
    groups = replies[1]["op_time"]
    assert {"matmul", "optimizer", "dropout", "layer norm"} <= set(groups)
    assert sum(g["share"] for g in groups.values()) == pytest.approx(1.0)
    assert all(g["ms_per_step"] > 0 and g["ops"] >= 1 for g in groups.values())


def test_finetune_throughput_steps_in_bfloat16_on_both_sides():
    pytest.importorskip("transformers")
    import keras
    import torch

    try:
        ours = _serve_one_step(
            "ours_graph", "classification", "--precision", "mixed_bfloat16"
        )
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert ours.model.dtype_policy.name == "mixed_bfloat16"
    peer = _serve_one_step(
        "transformers", "classification", "--precision", "mixed_bfloat16"
    )
    assert peer.precision == "mixed_bfloat16"
    from bench.suite.pretrain_throughput import torch_autocast

    with torch_autocast(peer.precision):  # the context its step runs in
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16
        assert torch.is_autocast_enabled("cpu")


def test_finetune_throughput_names_carry_a_precision_and_ratios_match_it():
    from bench.suite import finetune_throughput as bench

    assert bench.split_name("ours@mixed_bfloat16", "float32") == (
        "ours",
        "mixed_bfloat16",
    )
    assert bench.split_name("transformers", "auto") == ("transformers", "auto")
    names = (
        "ours",
        "ours@mixed_bfloat16",
        "transformers",
        "transformers@mixed_bfloat16",
    )
    seconds = dict(zip(names, (2.0, 1.0, 2.5, 1.6)))
    peak = {"gflops": 100.0, "gflops_per_cpu_second": 100.0}
    measured = {
        "timings": {
            n: {"wall": [s], "cpu": [s], "positions": [320]} for n, s in seconds.items()
        },
        "precisions": {n: bench.split_name(n, "float32")[1] for n in names},
        "peaks": [{n: peak for n in names}],
        "warmup_seconds": dict.fromkeys(names, 1.0),
        "positions": {n: {"positions_per_step": 320.0} for n in names},
    }
    rows = bench.summarise(measured, None, 32)
    assert rows["ours@mixed_bfloat16"]["precision"] == "mixed_bfloat16"
    # Against the plain (float32) peer, and against the bfloat16 peer.
    assert rows["ours@mixed_bfloat16"]["vs_transformers"] == pytest.approx(2.5)
    assert rows["ours@mixed_bfloat16"][
        "vs_transformers_same_precision"
    ] == pytest.approx(1.6)
    assert rows["ours"]["vs_transformers_same_precision"] == pytest.approx(1.25)


def test_finetune_throughput_with_batches_grouped_by_length():
    pytest.importorskip("transformers")
    _serve_one_step("ours_graph", "tagging", "--padding", "longest")
    _serve_one_step("transformers", "tagging", "--padding", "longest")


def test_finetune_throughput_trains_the_same_batches_on_both_sides():
    # The same sentences in the same length-grouped batches, in order: the
    # timed steps are the same work but for how each side pads (before,
    # the peer's own sampler put its longest batch first and biased the
    # ratio). Sentences of more pieces than a window: ours tags them in a
    # second window, the peer truncates; elsewhere the counts are equal.
    pytest.importorskip("transformers")
    from bench.suite import finetune_throughput as bench

    args = _finetune_args("--padding", "longest")
    ours = bench.make_trainer("ours_graph", "tagging", args)
    peer = bench.make_trainer("transformers", "tagging", args)
    assert ours.index_batches == peer.index_batches
    assert len(ours.index_batches) >= ours.epoch_batches
    whole = 0
    for counts in ours.counts[:40]:
        mask = peer._batch()["attention_mask"]
        if mask.shape[1] < args.max_seq_length:
            assert counts == (mask.numel(), int(mask.sum()))
            whole += 1
    assert whole >= 30
    # Grouped: a batch's sentences are of similar length (~1% padding).
    measured = {side: t.positions() for side, t in (("ours", ours), ("peer", peer))}
    assert measured["peer"]["padding_fraction"] < 0.05
    assert measured["ours"]["real_tokens_per_step"] == pytest.approx(
        measured["peer"]["real_tokens_per_step"], rel=0.02
    )


@pytest.mark.slow
def test_finetune_throughput_hands_both_workers_the_parents_batches(tmp_path):
    pytest.importorskip("transformers")
    from bench.suite import finetune_throughput as bench

    output = tmp_path / "result.json"
    command = ["--preset", "tiny", "--max-seq-length", "64", "--batch-size", "4"]
    command += ["--tasks", "classification", "--padding", "longest", "--core", "-1"]
    command += ["--warmup-steps", "1", "--steps", "2", "--rounds", "2"]
    assert bench.main(command + ["--output", str(output)]) == 0
    rows = json.loads(output.read_text())["tasks"]["classification"]["results"]
    ours, peer = rows["ours"], rows["transformers"]
    # The timed steps' positions: the same batches, each cut to its longest.
    assert ours["round_positions_per_step"] == pytest.approx(
        peer["round_positions_per_step"], rel=0.05
    )
    assert ours["epoch"]["batches_counted"] == peer["epoch"]["batches_counted"]


def test_finetune_throughput_peer_labels_qa_windows_at_the_answer():
    # Each window's labels point at the answer's tokens, or both at [CLS].
    pytest.importorskip("transformers")
    from bench.suite import finetune_throughput as bench

    tokenizer = bench.bert_tokenizer()
    assert tokenizer.tokenize("The court") == ["the", "court"]  # not [UNK]
    examples = bench._squad_examples()[:4]
    windows = bench.squad_windows(tokenizer, examples, length=64, doc_stride=8)
    golds = [e.answers[0][0].lower().replace(" ", "") for e in examples]
    starts = windows["start_positions"].tolist()
    ends = windows["end_positions"].tolist()
    answered = 0
    for ids, start, end in zip(windows["input_ids"].tolist(), starts, ends):
        if start == 0:
            assert end == 0
            continue
        answered += 1
        text = tokenizer.decode(ids[start : end + 1]).replace(" ", "")
        assert any(text in gold for gold in golds), text
    assert answered >= 1


@pytest.mark.slow
def test_finetune_throughput_runs_every_task_and_implementation(elsewhere):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from bench.suite import finetune_throughput as bench

    output = elsewhere / "report.json"
    names = ",".join(bench.IMPLEMENTATIONS)
    argv = ["--preset", "tiny", "--max-seq-length", "64", "--batch-size", "2"]
    argv += ["--warmup-steps", "1", "--steps", "1", "--rounds", "1"]
    argv += ["--implementations", names, "--output", str(output)]
    assert bench.main(argv) == 0
    report = json.loads(output.read_text())
    assert set(report["tasks"]) == set(bench.TASKS)
    for result in report["tasks"].values():
        assert set(result["results"]) == set(bench.IMPLEMENTATIONS)
        for row in result["results"].values():
            assert row["examples_per_second"] > 0 and 0 < row["mfu"] < 1
        assert result["results"]["transformers"]["vs_transformers"] == 1.0
    assert report["ours_uses_xla"]["ours_xla"] is True
    assert report["ours_uses_xla"]["ours_graph"] is False


def test_peer_tokenizer_reads_the_vocabulary_not_unknown_tokens():
    # transformers 5 ignores BertTokenizerFast(vocab_file=...): every word
    # became [UNK] (id 100) in serving_latency's peer.
    pytest.importorskip("transformers")
    from bench.hf_peer import bert_tokenizer

    tokenizer = bert_tokenizer(REPO / "electra_tf" / "assets" / "vocab.txt")
    assert tokenizer("the movie")["input_ids"] == [101, 1996, 3185, 102]
