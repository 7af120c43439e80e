"""Conversion parity at ELECTRA-Small++ size: ours vs transformers vs keras-hub.

Builds a random ELECTRA-Small++ pair in transformers (discriminator
H=256, E=128, 12 layers; full-width generator; tied embeddings), with
weights of a trained model's scale (kernels and biases ~N(0, 0.05),
LayerNorm gains 1 + N(0, 0.1)), saves it (safetensors), converts it to ours
and back, and measures on real sentences (rt_polarity, the bundled BERT
vocabulary, sequence length 128, pairs, padding):

* HF -> ours: max |difference| of discriminator logits, generator logits
  and every hidden state, against transformers (PyTorch, CPU, float32);
* ours -> HF: whether writing back reproduces every tensor exactly, and
  transformers' outputs on what we wrote;
* keras-hub: our encoder vs `keras_hub.models.ElectraBackbone` holding the
  same weights (tanh GELU), and with its feed-forward switched to exact GELU.

    python -m bench.suite.conversion_parity  # bench/results/conversion_parity.json
"""

from __future__ import annotations

import json
import pathlib
import tempfile

import numpy as np

from bench.result_file import write_result
from bench.run_info import run_info

REPO = pathlib.Path(__file__).resolve().parents[2]


def main():
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    import keras_hub
    import safetensors.numpy
    import torch
    import transformers

    from electra_tf.conversion.hf import load_hf_pretrainer, save_hf_pretrainer
    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.models.keras_hub_preset import keras_hub_backbone_from_encoder
    from electra_tf.models.text_classifier_preprocessor import (
        ElectraTextClassifierPreprocessor,
    )

    torch.manual_seed(0)
    vocabulary = Vocabulary.from_file(REPO / "electra_tf/assets/vocab.txt")
    common = dict(
        vocab_size=vocabulary.size,
        embedding_size=128,
        hidden_size=256,
        num_hidden_layers=12,
        num_attention_heads=4,
        intermediate_size=1024,
        max_position_embeddings=512,
    )
    discriminator = transformers.ElectraForPreTraining(
        transformers.ElectraConfig(**common)
    ).eval()
    generator = transformers.ElectraForMaskedLM(
        transformers.ElectraConfig(**common)
    ).eval()
    with torch.no_grad():
        for model in (discriminator, generator):
            for name, parameter in model.named_parameters():
                noise = torch.randn_like(parameter)
                if "LayerNorm.weight" in name:
                    parameter.copy_(1.0 + 0.1 * noise)
                else:
                    parameter.copy_(0.05 * noise)
        generator.electra.embeddings.load_state_dict(
            discriminator.electra.embeddings.state_dict()
        )

    rows = (REPO / "electra_tf/assets/tasks/rt_polarity/dev.tsv").read_text()
    sentences = [line.split("\t")[0] for line in rows.splitlines()[1:9]]
    tokenizer = keras_hub.models.ElectraTokenizer(
        vocabulary=list(vocabulary.tokens), lowercase=True
    )
    packer = ElectraTextClassifierPreprocessor(tokenizer, sequence_length=128)
    x = packer(x=(np.array(sentences[:4]), np.array(sentences[4:])))
    batch = {k: np.asarray(v).astype("int32") for k, v in x.items()}
    feed = dict(
        input_ids=torch.tensor(batch["token_ids"], dtype=torch.long),
        token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
        attention_mask=torch.tensor(batch["padding_mask"], dtype=torch.long),
        output_hidden_states=True,
    )
    with torch.no_grad():
        d, g = discriminator(**feed), generator(**feed)

    def max_diff(a, b):
        return float(np.abs(np.asarray(a) - np.asarray(b)).max())

    def hidden(encoder):
        first = encoder.embeddings_projection or encoder.embeddings_dropout
        taps = [first.output] + [layer.output for layer in encoder.transformer_layers]
        return np.stack(keras.Model(encoder.input, taps)(batch))

    length = batch["token_ids"].shape[1]
    positions = np.tile(np.arange(length, dtype="int32"), (len(sentences[:4]), 1))
    results = {
        "configuration": "ELECTRA-Small++ (H 256, E 128, 12 layers, generator "
        "full width), random weights ~N(0, 0.05), LayerNorm gains 1 + N(0, 0.1)",
        "inputs": "4 rt_polarity sentence pairs, BERT uncased vocabulary, length 128",
        "real_tokens": int(batch["padding_mask"].sum()),
    }
    with tempfile.TemporaryDirectory() as directory:
        directory = pathlib.Path(directory)
        discriminator.save_pretrained(directory / "hf" / "discriminator")
        generator.save_pretrained(directory / "hf" / "generator")
        ours = load_hf_pretrainer(
            directory / "hf" / "discriminator", directory / "hf" / "generator"
        )
        results["converted_config"] = ours.model_config.to_dict()
        results["hf_to_ours_max_abs_diff"] = {
            "discriminator_logits": max_diff(d.logits, ours.discriminator(batch)),
            "discriminator_hidden_states": max_diff(
                torch.stack(d.hidden_states), hidden(ours.discriminator_encoder)
            ),
            "generator_logits": max_diff(
                g.logits, ours.generator({**batch, "mask_positions": positions})
            ),
            "generator_hidden_states": max_diff(
                torch.stack(g.hidden_states), hidden(ours.generator.encoder)
            ),
        }
        results["output_scale_max_abs"] = {
            "discriminator_logits": float(d.logits.abs().max()),
            "generator_logits": float(g.logits.abs().max()),
        }
        paths = save_hf_pretrainer(ours, directory / "back")
        identical = True
        for tower in ("discriminator", "generator"):
            original = safetensors.numpy.load_file(
                directory / "hf" / tower / "model.safetensors"
            )
            written = safetensors.numpy.load_file(
                pathlib.Path(paths[tower]) / "model.safetensors"
            )
            identical &= sorted(original) == sorted(written) and all(
                np.array_equal(original[k], written[k]) for k in original
            )
        results["ours_to_hf_tensors_identical"] = bool(identical)
        reloaded = transformers.ElectraForPreTraining.from_pretrained(
            paths["discriminator"]
        ).eval()
        with torch.no_grad():
            again = reloaded(**feed).logits
        results["ours_to_hf_discriminator_logits_max_abs_diff"] = max_diff(
            again, ours.discriminator(batch)
        )

    encoder = ours.discriminator_encoder
    backbone = keras_hub_backbone_from_encoder(encoder)
    reference = encoder(batch)["sequence_output"]
    tanh_gelu = max_diff(backbone(batch)["sequence_output"], reference)
    for layer in backbone.transformer_layers:
        layer._feedforward_intermediate_dense.activation = keras.activations.gelu
    exact_gelu = max_diff(backbone(batch)["sequence_output"], reference)
    results["keras_hub_sequence_output_max_abs_diff"] = {
        "tanh_gelu_as_keras_hub": tanh_gelu,
        "exact_gelu_swapped_in": exact_gelu,
        "sequence_output_max_abs": float(np.abs(np.asarray(reference)).max()),
    }
    results["versions"] = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "keras_hub": keras_hub.__version__,
    }
    out = REPO / "bench" / "results" / "conversion_parity.json"
    write_result(out, {**run_info(__file__), **results})
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
