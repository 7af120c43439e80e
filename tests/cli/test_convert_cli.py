"""pretrain/convert.py: TF1 -> ours -> Hugging Face end to end, and its errors."""

import json
import pathlib

import numpy as np
import pytest
import safetensors.numpy

import electra_tf.cli.convert
from tests.helpers import HF_FIXTURE, TF1_STEP

REPO = pathlib.Path(__file__).parents[2]
FIXTURE = HF_FIXTURE
STEP = TF1_STEP
VOCAB = FIXTURE / "discriminator" / "vocab.txt"


@pytest.fixture(scope="module")
def cli():
    return electra_tf.cli.convert


def _error(cli, capsys, *argv):
    assert cli.main(list(argv)) == 2
    message = capsys.readouterr().err.strip().splitlines()[-1]
    assert message.startswith("error: ")
    return message


def test_tf1_to_ours_to_hf_gives_back_the_hf_weights(
    cli,
    capsys,
    tf1_checkpoint,
    tmp_path,
):
    ours = tmp_path / "ours"
    argv = ["tf1-to-electra", "--checkpoint", tf1_checkpoint, "--vocab", str(VOCAB)]
    assert cli.main([*argv, "--num-heads", "2", "--output", str(ours)]) == 0
    printed = capsys.readouterr().out
    assert f"--init-checkpoint {ours / f'ckpt-{STEP}'}" in printed
    config = json.loads((ours / "config.json").read_text())
    assert config["step"] == STEP and config["source"] == tf1_checkpoint
    assert config["run_flags"].startswith("--preset tiny --hparams")
    for export in ("discriminator/config.json", "saved_model", "hub/encoder"):
        assert (ours / "export" / export).exists(), export

    hf = tmp_path / "hf"
    assert (
        cli.main(["electra-to-hf", "--checkpoint", str(ours), "--output", str(hf)]) == 0
    )
    for tower in ("discriminator", "generator"):
        theirs = safetensors.numpy.load_file(FIXTURE / tower / "model.safetensors")
        back = safetensors.numpy.load_file(hf / tower / "model.safetensors")
        assert sorted(back) == sorted(theirs)
        for name, value in theirs.items():
            np.testing.assert_array_equal(back[name], value, err_msg=name)
        assert (hf / tower / "vocab.txt").read_text() == VOCAB.read_text()


def test_errors_are_one_line(cli, capsys, tf1_checkpoint, tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    message = _error(
        cli,
        capsys,
        "tf1-to-electra",
        "--checkpoint",
        tf1_checkpoint,
        "--output",
        str(busy),
    )
    assert "is not empty; pass --overwrite" in message
    assert (busy / "keep.txt").read_text() == "mine"

    message = _error(
        cli,
        capsys,
        "tf1-to-electra",
        "--checkpoint",
        str(tmp_path / "missing"),
        "--output",
        str(tmp_path / "a"),
    )
    assert message.startswith("error: cannot read checkpoint") and "missing" in message

    # The 1/2-width generator forced into the tiny preset's shapes: every
    # tensor that differs is named, on one line.
    message = _error(
        cli,
        capsys,
        "tf1-to-electra",
        "--checkpoint",
        tf1_checkpoint,
        "--vocab",
        str(VOCAB),
        "--preset",
        "tiny",
        "--output",
        str(tmp_path / "b"),
    )
    assert "does not fit the model (" in message
    assert "electra/encoder/layer_0/attention/self/query/kernel: shape [32, 32] in" in (
        message
    )
    assert not (tmp_path / "b" / "config.json").exists()

    message = _error(
        cli,
        capsys,
        "electra-to-hf",
        "--checkpoint",
        str(tmp_path / "none"),
        "--output",
        str(tmp_path / "c"),
    )
    assert "none" in message


@pytest.mark.slow
def test_hf_to_ours_to_keras_hub_and_back(cli, capsys, tmp_path):
    """The other three commands: HF -> ours -> keras-hub preset -> our encoder,
    the discriminator's weights unchanged at every hop."""
    ours = tmp_path / "ours"
    argv = [
        "hf-to-electra",
        "--discriminator",
        str(FIXTURE / "discriminator"),
        "--generator",
        str(FIXTURE / "generator"),
        "--output",
        str(ours),
    ]
    assert cli.main(argv) == 0
    assert "--init-checkpoint" in capsys.readouterr().out
    assert (ours / "vocab.txt").read_text() == VOCAB.read_text()

    kh = tmp_path / "keras_hub"
    argv = ["electra-to-keras-hub", "--checkpoint", str(ours), "--output", str(kh)]
    assert cli.main(argv) == 0
    assert (kh / "config.json").exists() and (kh / "model.weights.h5").exists()

    back = tmp_path / "back"
    argv = ["keras-hub-to-electra", "--preset", str(kh), "--output", str(back)]
    assert cli.main(argv) == 0
    capsys.readouterr()

    import keras

    import electra_tf.models.encoder  # noqa: F401  (registers the class)

    encoder = keras.models.load_model(back / "export" / "encoder.keras")
    theirs = safetensors.numpy.load_file(
        FIXTURE / "discriminator" / "model.safetensors"
    )
    np.testing.assert_array_equal(
        encoder.token_embedding.embeddings.numpy(),
        theirs["electra.embeddings.word_embeddings.weight"],
    )
    query = encoder.transformer_layers[1]._self_attention_layer._query_dense
    np.testing.assert_array_equal(
        query.kernel.numpy().reshape(query.kernel.shape[0], -1),
        theirs["electra.encoder.layer.1.attention.self.query.weight"].T,
    )


def test_keras_hub_to_ours_keeps_a_learned_whitespace_token(cli, capsys, tmp_path):
    """keras-hub's learner writes a `" "` token (the demo vocabulary has one);
    keras-hub's tokenizer loader strips it to an empty token, which a
    `Vocabulary` refuses, so converting our own demo export used to fail."""
    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.models.encoder import ElectraEncoder
    from electra_tf.models.keras_hub_preset import (
        preset_vocabulary,
        save_keras_hub_preset,
    )
    from electra_tf.presets import get_preset

    tokens = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", " ", "a", "##b")
    vocabulary = Vocabulary(tokens, lowercase=False)
    config = get_preset("tiny").model.override(
        vocabulary_size=len(tokens), max_sequence_length=16
    )
    preset = tmp_path / "preset"
    save_keras_hub_preset(
        ElectraEncoder.discriminator_from_config(config), vocabulary, preset
    )
    back = tmp_path / "back"
    argv = ["keras-hub-to-electra", "--preset", str(preset), "--output", str(back)]
    assert cli.main(argv) == 0, capsys.readouterr().err
    back = preset_vocabulary(str(back / "export" / "discriminator"))
    assert back.tokens == tokens and not back.lowercase


def test_messages_point_at_the_real_problem_and_advice_runs(
    cli, capsys, tiny_configs, tmp_path
):
    """`tf1-to-electra` given one of our checkpoints says it is not an original TF1
    checkpoint and which command converts ours (was: "comes without a vocabulary:
    pass --vocab"); `electra-to-hf` of a missing path says it does not exist (was:
    "no config.json next to ..."); of an Electric run, it names `electra-convert
    electra-to-hf --encoder-only`, and that advice runs (was: advice to convert
    export/discriminator, which no command takes)."""
    from electra_tf.conversion.convert import write_pretraining_checkpoint
    from tests.helpers import make_pretrainer

    # A missing checkpoint path (was: "no config.json next to ...").
    missing = tmp_path / "none"
    argv = ["electra-to-hf", "--checkpoint", str(missing)]
    message = _error(cli, capsys, *argv, "--output", str(tmp_path / "c"))
    assert message.startswith(f"error: no checkpoint at {missing}: it does not exist")
    # One of our checkpoints given to the TF1 conversion (was: "comes without
    # a vocabulary: pass --vocab vocab.txt").
    model_config, pretraining_config = tiny_configs
    electric = make_pretrainer(
        model_config, pretraining_config.override(objective="electric")
    )
    ours = write_pretraining_checkpoint(electric, tmp_path / "electric")["checkpoint"]
    argv = ["tf1-to-electra", "--checkpoint", ours, "--output", str(tmp_path / "d")]
    message = _error(cli, capsys, *argv)
    assert message.startswith(
        f"error: {ours} is not an original (TF1) ELECTRA checkpoint: none of its "
    )
    assert "one of our checkpoints converts with electra-to-hf" in message
    # An Electric run to Hugging Face: refused, and the command the refusal
    # gives runs (was: "convert its exported discriminator", which no command
    # takes).
    argv = ["electra-to-hf", "--checkpoint", ours, "--output", str(tmp_path / "hf")]
    message = _error(cli, capsys, *argv)
    assert "electra-convert electra-to-hf --encoder-only" in message
    assert cli.main([*argv, "--encoder-only"]) == 0
    hf = tmp_path / "hf" / "discriminator"
    written = json.loads((hf / "config.json").read_text())
    assert written["architectures"] == ["ElectraModel"]
    tensors = safetensors.numpy.load_file(hf / "model.safetensors")
    table = electric.discriminator_encoder.token_embedding.embeddings.numpy()
    np.testing.assert_array_equal(tensors["embeddings.word_embeddings.weight"], table)
