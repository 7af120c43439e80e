"""`pretrainer_variables`: each weight once under its original name, or a refusal."""

import pytest

from electra_tf.conversion.hf import save_hf_pretrainer
from electra_tf.conversion.original_layout import pretrainer_variables
from electra_tf.errors import ConversionError
from tests.helpers import make_pretrainer, random_batch


def _pretrainer(tiny_configs, objective):
    model_config, pretraining_config = tiny_configs
    pretrainer = make_pretrainer(
        model_config, pretraining_config.override(objective=objective)
    )
    pretrainer(random_batch(batch_size=2, length=pretraining_config.max_seq_length))
    return pretrainer


@pytest.mark.parametrize("objective", ["electra", "mlm"])
def test_every_weight_has_one_original_name(tiny_configs, objective):
    pretrainer = _pretrainer(tiny_configs, objective)
    variables = pretrainer_variables(pretrainer)
    named = [id(v) for v in variables.values()]
    assert len(named) == len(set(named))
    assert set(named) == {id(v) for v in pretrainer.trainable_variables}
    scope = "electra" if objective == "mlm" else "generator"
    assert f"{scope}/encoder/layer_0/attention/self/query/kernel" in variables


@pytest.mark.parametrize("objective", ["replace_mlm", "all_tokens_mlm"])
def test_ablations_discriminators_are_refused(tiny_configs, objective, tmp_path):
    # Their discriminator is an MLM-type model (discriminator_mlm), with no
    # place in the original's layout. Before the refusal they were taken for
    # the MLM baseline: the generator alone, named as the discriminator (half
    # the weights, the discriminator's missing), and electra-to-hf wrote only
    # the generator.
    pretrainer = _pretrainer(tiny_configs, objective)
    with pytest.raises(ConversionError, match=f"{objective} pretrainer") as error:
        pretrainer_variables(pretrainer)
    assert "electra-to-hf --encoder-only" in str(error.value)
    with pytest.raises(ConversionError, match=f"{objective} pretrainer"):
        save_hf_pretrainer(pretrainer, tmp_path / "hf")
    assert not (tmp_path / "hf").exists()
