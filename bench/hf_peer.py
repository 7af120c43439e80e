"""ELECTRA pre-training with Hugging Face transformers on PyTorch: the peer we time.

Written the way a typical transformers user writes it: `ElectraForMaskedLM` as
generator and `ElectraForPreTraining` as discriminator sharing one embedding
module, the generator's logits computed at every position (the model's default
when `labels` mark the masked ones), replacements sampled with Gumbel-max
under `no_grad`, the RTD loss weighted 50, `torch.optim.AdamW` and global-norm
clipping. The sizes and the masking rule are ours, so both sides do the same
work per step. Only the benchmarks import this module (it needs torch).
"""

from __future__ import annotations

import torch
import transformers


def bert_tokenizer(vocabulary, lowercase: bool = True):
    """transformers' fast BERT tokenizer over a WordPiece `vocab.txt`.

    From the directory holding it: transformers 5 renamed the constructor's
    `vocab_file` to `vocab` and ignores the old name, leaving a tokenizer that
    maps every word to [UNK].
    """
    import pathlib

    vocabulary = pathlib.Path(vocabulary)
    if vocabulary.name != "vocab.txt":
        raise ValueError(f"expected a vocab.txt, got {vocabulary}")
    return transformers.BertTokenizerFast.from_pretrained(
        str(vocabulary.parent), do_lower_case=lowercase
    )


def gumbel_max_sample(logits):
    """One sample per row of softmax(logits) over the last axis (Gumbel-max)."""
    gumbel = -torch.log(-torch.log(torch.rand_like(logits) + 1e-9) + 1e-9)
    return torch.argmax(logits + gumbel, dim=-1)


def electra_configs(model, vocabulary_size: int, max_positions: int):
    """(generator, discriminator) `ElectraConfig`s for one of our `ModelConfig`s."""
    common = dict(
        vocab_size=vocabulary_size,
        embedding_size=model.embedding_dim,
        num_hidden_layers=model.num_layers,
        max_position_embeddings=max_positions,
        type_vocab_size=model.num_segments,
        hidden_dropout_prob=model.dropout,
        attention_probs_dropout_prob=model.dropout,
        layer_norm_eps=model.layer_norm_epsilon,
        hidden_act="gelu",
    )
    discriminator = transformers.ElectraConfig(
        hidden_size=model.hidden_dim,
        num_attention_heads=model.resolved_num_heads,
        intermediate_size=model.resolved_intermediate_dim,
        **common,
    )
    generator = transformers.ElectraConfig(
        hidden_size=model.generator_hidden_dim,
        num_attention_heads=model.generator_num_heads,
        intermediate_size=model.generator_intermediate_dim,
        **{**common, "num_hidden_layers": model.generator_num_layers},
    )
    return generator, discriminator


class HfElectraPretraining:
    """A generator + discriminator pair and one optimisation step."""

    def __init__(
        self,
        model,
        pretraining,
        vocabulary,
        learning_rate: float = 5e-4,
        seed: int = 0,
    ):
        torch.manual_seed(seed)
        generator_config, discriminator_config = electra_configs(
            model, vocabulary.size, model.max_sequence_length
        )
        self.generator = transformers.ElectraForMaskedLM(generator_config)
        self.discriminator = transformers.ElectraForPreTraining(discriminator_config)
        # ELECTRA shares the whole embedding block; the MLM output matrix is
        # the (shared) token embedding.
        self.generator.electra.embeddings = self.discriminator.electra.embeddings
        self.generator.generator_lm_head.weight = (
            self.discriminator.electra.embeddings.word_embeddings.weight
        )
        parameters = {
            id(p): p
            for module in (self.generator, self.discriminator)
            for p in module.parameters()
        }
        self.parameters = list(parameters.values())
        self.optimizer = torch.optim.AdamW(
            self.parameters, lr=learning_rate, weight_decay=0.01, eps=1e-6
        )
        self.pretraining = pretraining
        self.special_ids = torch.tensor(
            [
                vocabulary.pad_id,
                vocabulary.cls_id,
                vocabulary.sep_id,
                vocabulary.mask_id,
            ]
        )
        self.mask_id = vocabulary.mask_id
        self.generator.train()
        self.discriminator.train()

    def _mask(self, token_ids, attention_mask):
        """ELECTRA's masking rule (`electra_tf.pretraining.masking`), written in torch.

        `max(1, min(N, round(real tokens * mask_prob)))` positions drawn
        uniformly without replacement from the non-special real tokens; 85%
        of them shown as [MASK], the rest keep their token.
        """
        config = self.pretraining
        candidates = ~torch.isin(token_ids, self.special_ids) & attention_mask.bool()
        scores = torch.rand(token_ids.shape).masked_fill(~candidates, -1.0)
        top_scores, positions = scores.topk(config.max_predictions_per_seq, dim=-1)
        count = torch.round(attention_mask.sum(-1) * config.mask_prob).long()
        count = count.clamp(1, config.max_predictions_per_seq)
        slots = torch.arange(config.max_predictions_per_seq)
        live = (slots[None, :] < count[:, None]) & (top_scores >= 0)
        chosen = torch.zeros_like(candidates).scatter(1, positions, live)
        shown_as_mask = chosen & (torch.rand(token_ids.shape) < config.mask_token_prob)
        masked_ids = torch.where(shown_as_mask, self.mask_id, token_ids)
        labels = torch.where(chosen, token_ids, -100)
        return masked_ids, labels, chosen

    def train_step(self, batch) -> float:
        token_ids = torch.from_numpy(batch["token_ids"]).long()
        segment_ids = torch.from_numpy(batch["segment_ids"]).long()
        attention_mask = torch.from_numpy(batch["padding_mask"]).long()
        masked_ids, labels, chosen = self._mask(token_ids, attention_mask)
        generated = self.generator(
            input_ids=masked_ids,
            attention_mask=attention_mask,
            token_type_ids=segment_ids,
            labels=labels,
        )
        with torch.no_grad():
            logits = generated.logits[chosen]
            sampled = gumbel_max_sample(logits)
        corrupted = token_ids.clone()
        corrupted[chosen] = sampled
        is_replaced = (corrupted != token_ids).long()
        judged = self.discriminator(
            input_ids=corrupted,
            attention_mask=attention_mask,
            token_type_ids=segment_ids,
            labels=is_replaced,
        )
        loss = (
            self.pretraining.gen_weight * generated.loss
            + self.pretraining.resolved_disc_weight * judged.loss
        )
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.parameters, 1.0)
        self.optimizer.step()
        return loss.item()
