"""CTC speech recognition fine-tuning in the shape of the Hugging Face XLS-R recipe: the blog post
"Fine-tuning XLS-R for Multi-Lingual ASR with Transformers" (https://huggingface.co/blog/fine-tune-xlsr-wav2vec2)
and examples/pytorch/speech-recognition/run_speech_recognition_ctc.py in huggingface/transformers, with
Wav2Vec2ForCTC (src/transformers/models/wav2vec2/modeling_wav2vec2.py, stable-layer-norm variant) and the
Trainer's inner loop written as small stand-ins (transformers is not imported).
Suspicious-but-correct patterns kept: `model.freeze_feature_encoder()` sets requires_grad=False on the
convolutional feature encoder and its `_requires_grad` flag, so the waveform convs never learn and the
Trainer's optimizer groups (filtered on `p.requires_grad`) leave them out; the feature encoder's
`hidden_states.requires_grad = True` line guarded by `_requires_grad and self.training` (off here);
SpecAugment writes the learned `masked_spec_embed` nn.Parameter into the projected features in place
(`hidden_states[mask_time_indices] = self.masked_spec_embed.to(dtype)`), which is its only path to a
gradient; the encoder zeroes padded frames in place (`hidden_states[~expand_attention_mask] = 0`); the
frame-level attention mask built by writing ones at `output_lengths - 1` then flip/cumsum/flip; the
positional conv embedding wrapped in `nn.utils.parametrizations.weight_norm(dim=2)` (parameters
original0/original1) with a SamePad that drops the last frame; LayerDrop drawn with `torch.rand([])`
(layerdrop=0.0 as in the recipe); the pretrained checkpoint loaded with strict=False (pretraining-only
`project_q`/`project_hid` unused, the new `lm_head` missing); labels padded with -100 by the CTC data
collator and removed with `masked_select`; `log_softmax(..., dtype=torch.float32).transpose(0, 1)` into
`F.ctc_loss` under `torch.backends.cudnn.flags(enabled=False)`; Trainer-style `tr_loss += loss.detach()`,
clip_grad_norm_, `model.zero_grad()`, and the logged loss reset in place with `tr_loss -= tr_loss`."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class Wav2Vec2Config:
    def __init__(self, **kwargs):
        self.vocab_size = 8
        self.pad_token_id = 0
        self.hidden_size = 16
        self.num_hidden_layers = 2
        self.num_attention_heads = 2
        self.intermediate_size = 32
        self.conv_dim = (8, 8)
        self.conv_kernel = (10, 3)
        self.conv_stride = (5, 2)
        self.conv_bias = True
        self.num_conv_pos_embeddings = 4
        self.num_conv_pos_embedding_groups = 2
        self.layer_norm_eps = 1e-5
        self.hidden_dropout = 0.1
        self.attention_dropout = 0.1
        self.activation_dropout = 0.0
        self.feat_proj_dropout = 0.0
        self.final_dropout = 0.0
        self.layerdrop = 0.1
        self.mask_time_prob = 0.05
        self.mask_time_length = 4
        self.mask_time_min_masks = 2
        self.ctc_loss_reduction = "sum"
        self.ctc_zero_infinity = False
        self.__dict__.update(kwargs)


# ---- transformers/models/wav2vec2/modeling_wav2vec2.py (stand-in) ----
def _compute_mask_indices(shape, mask_prob, mask_length, attention_mask=None, min_masks=0):
    batch_size, sequence_length = shape
    input_lengths = (attention_mask.sum(-1).tolist() if attention_mask is not None
                     else [sequence_length] * batch_size)
    spec_aug_mask = torch.zeros(batch_size, sequence_length, dtype=torch.bool)
    for b, input_length in enumerate(input_lengths):
        num_masked_span = int(mask_prob * input_length / mask_length + torch.rand(()).item())
        num_masked_span = max(num_masked_span, min_masks)
        num_masked_span = min(num_masked_span, input_length // mask_length)
        starts = torch.randperm(input_length - (mask_length - 1))[:num_masked_span]
        for s in starts.tolist():
            spec_aug_mask[b, s:s + mask_length] = True
    return spec_aug_mask


class Wav2Vec2LayerNormConvLayer(nn.Module):
    def __init__(self, config, layer_id=0):
        super().__init__()
        self.in_conv_dim = config.conv_dim[layer_id - 1] if layer_id > 0 else 1
        self.out_conv_dim = config.conv_dim[layer_id]
        self.conv = nn.Conv1d(self.in_conv_dim, self.out_conv_dim, kernel_size=config.conv_kernel[layer_id],
                              stride=config.conv_stride[layer_id], bias=config.conv_bias)
        self.layer_norm = nn.LayerNorm(self.out_conv_dim, elementwise_affine=True)

    def forward(self, hidden_states):
        hidden_states = self.conv(hidden_states)
        hidden_states = self.layer_norm(hidden_states.transpose(-2, -1)).transpose(-2, -1)
        return F.gelu(hidden_states)


class Wav2Vec2FeatureEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.conv_layers = nn.ModuleList([Wav2Vec2LayerNormConvLayer(config, layer_id=i)
                                          for i in range(len(config.conv_dim))])
        self._requires_grad = True

    def _freeze_parameters(self):
        for param in self.parameters():
            param.requires_grad = False
        self._requires_grad = False

    def forward(self, input_values):
        hidden_states = input_values[:, None]
        # make sure hidden_states require grad for gradient_checkpointing
        if self._requires_grad and self.training:
            hidden_states.requires_grad = True
        for conv_layer in self.conv_layers:
            hidden_states = conv_layer(hidden_states)
        return hidden_states


class Wav2Vec2FeatureProjection(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer_norm = nn.LayerNorm(config.conv_dim[-1], eps=config.layer_norm_eps)
        self.projection = nn.Linear(config.conv_dim[-1], config.hidden_size)
        self.dropout = nn.Dropout(config.feat_proj_dropout)

    def forward(self, hidden_states):
        norm_hidden_states = self.layer_norm(hidden_states)
        hidden_states = self.dropout(self.projection(norm_hidden_states))
        return hidden_states, norm_hidden_states


class Wav2Vec2SamePadLayer(nn.Module):
    def __init__(self, num_conv_pos_embeddings):
        super().__init__()
        self.num_pad_remove = 1 if num_conv_pos_embeddings % 2 == 0 else 0

    def forward(self, hidden_states):
        if self.num_pad_remove > 0:
            hidden_states = hidden_states[:, :, : -self.num_pad_remove]
        return hidden_states


class Wav2Vec2PositionalConvEmbedding(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.conv = nn.Conv1d(config.hidden_size, config.hidden_size, kernel_size=config.num_conv_pos_embeddings,
                              padding=config.num_conv_pos_embeddings // 2,
                              groups=config.num_conv_pos_embedding_groups)
        self.conv = nn.utils.parametrizations.weight_norm(self.conv, name="weight", dim=2)
        self.padding = Wav2Vec2SamePadLayer(config.num_conv_pos_embeddings)

    def forward(self, hidden_states):
        hidden_states = hidden_states.transpose(1, 2)
        hidden_states = F.gelu(self.padding(self.conv(hidden_states)))
        return hidden_states.transpose(1, 2)


class Wav2Vec2Attention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.dropout = dropout
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, hidden_states, attention_mask=None):
        bsz, tgt_len, embed_dim = hidden_states.size()
        shape = (bsz, tgt_len, self.num_heads, self.head_dim)
        q = (self.q_proj(hidden_states) * self.scaling).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        attn_weights = torch.matmul(q, k.transpose(-1, -2))
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_probs = F.dropout(F.softmax(attn_weights, dim=-1), p=self.dropout, training=self.training)
        attn_output = torch.matmul(attn_probs, v).transpose(1, 2).reshape(bsz, tgt_len, embed_dim)
        return self.out_proj(attn_output)


class Wav2Vec2FeedForward(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.intermediate_dropout = nn.Dropout(config.activation_dropout)
        self.intermediate_dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.output_dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.output_dropout = nn.Dropout(config.hidden_dropout)

    def forward(self, hidden_states):
        hidden_states = self.intermediate_dropout(F.gelu(self.intermediate_dense(hidden_states)))
        return self.output_dropout(self.output_dense(hidden_states))


class Wav2Vec2EncoderLayerStableLayerNorm(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = Wav2Vec2Attention(config.hidden_size, config.num_attention_heads, config.attention_dropout)
        self.dropout = nn.Dropout(config.hidden_dropout)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.feed_forward = Wav2Vec2FeedForward(config)
        self.final_layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden_states, attention_mask=None):
        attn_residual = hidden_states
        hidden_states = self.layer_norm(hidden_states)
        hidden_states = self.dropout(self.attention(hidden_states, attention_mask=attention_mask))
        hidden_states = attn_residual + hidden_states
        hidden_states = hidden_states + self.feed_forward(self.final_layer_norm(hidden_states))
        return hidden_states


class Wav2Vec2EncoderStableLayerNorm(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.pos_conv_embed = Wav2Vec2PositionalConvEmbedding(config)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout)
        self.layers = nn.ModuleList([Wav2Vec2EncoderLayerStableLayerNorm(config)
                                     for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states, attention_mask=None):
        if attention_mask is not None:
            # make sure padded tokens are not attended to
            expand_attention_mask = attention_mask.unsqueeze(-1).repeat(1, 1, hidden_states.shape[2])
            hidden_states[~expand_attention_mask] = 0
            attention_mask = 1.0 - attention_mask[:, None, None, :].to(dtype=hidden_states.dtype)
            attention_mask = attention_mask * torch.finfo(hidden_states.dtype).min
            attention_mask = attention_mask.expand(attention_mask.shape[0], 1, attention_mask.shape[-1],
                                                   attention_mask.shape[-1])
        position_embeddings = self.pos_conv_embed(hidden_states)
        hidden_states = hidden_states + position_embeddings
        hidden_states = self.dropout(hidden_states)
        for layer in self.layers:
            # add LayerDrop (see https://arxiv.org/abs/1909.11556 for description)
            dropout_probability = torch.rand([])
            skip_the_layer = True if self.training and (dropout_probability < self.config.layerdrop) else False
            if not skip_the_layer:
                hidden_states = layer(hidden_states, attention_mask=attention_mask)
        return self.layer_norm(hidden_states)


class Wav2Vec2PreTrainedModel(nn.Module):
    def _get_feat_extract_output_lengths(self, input_lengths):
        def _conv_out_length(input_length, kernel_size, stride):
            return torch.div(input_length - kernel_size, stride, rounding_mode="floor") + 1
        for kernel_size, stride in zip(self.config.conv_kernel, self.config.conv_stride):
            input_lengths = _conv_out_length(input_lengths, kernel_size, stride)
        return input_lengths

    def _get_feature_vector_attention_mask(self, feature_vector_length, attention_mask):
        non_padded_lengths = attention_mask.cumsum(dim=-1)[:, -1]
        output_lengths = self._get_feat_extract_output_lengths(non_padded_lengths).to(torch.long)
        batch_size = attention_mask.shape[0]
        attention_mask = torch.zeros((batch_size, feature_vector_length), dtype=attention_mask.dtype)
        attention_mask[(torch.arange(attention_mask.shape[0]), output_lengths - 1)] = 1
        return attention_mask.flip([-1]).cumsum(-1).flip([-1]).bool()

    @classmethod
    def from_pretrained(cls, state_dict, config):
        model = cls(config)
        missing_keys, unexpected_keys = model.load_state_dict(state_dict, strict=False)
        print(f"unused weights from checkpoint: {unexpected_keys}")
        print(f"newly initialized weights: {missing_keys}")
        return model


class Wav2Vec2Model(Wav2Vec2PreTrainedModel):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.feature_extractor = Wav2Vec2FeatureEncoder(config)
        self.feature_projection = Wav2Vec2FeatureProjection(config)
        self.masked_spec_embed = nn.Parameter(torch.Tensor(config.hidden_size).uniform_())
        self.encoder = Wav2Vec2EncoderStableLayerNorm(config)

    def _mask_hidden_states(self, hidden_states, attention_mask=None):
        batch_size, sequence_length, hidden_size = hidden_states.size()
        if self.config.mask_time_prob > 0 and self.training:
            mask_time_indices = _compute_mask_indices((batch_size, sequence_length),
                                                      mask_prob=self.config.mask_time_prob,
                                                      mask_length=self.config.mask_time_length,
                                                      attention_mask=attention_mask,
                                                      min_masks=self.config.mask_time_min_masks)
            hidden_states[mask_time_indices] = self.masked_spec_embed.to(hidden_states.dtype)
        return hidden_states

    def forward(self, input_values, attention_mask=None):
        extract_features = self.feature_extractor(input_values)
        extract_features = extract_features.transpose(1, 2)
        if attention_mask is not None:
            attention_mask = self._get_feature_vector_attention_mask(extract_features.shape[1], attention_mask)
        hidden_states, extract_features = self.feature_projection(extract_features)
        hidden_states = self._mask_hidden_states(hidden_states, attention_mask=attention_mask)
        return self.encoder(hidden_states, attention_mask=attention_mask)


class Wav2Vec2ForPreTraining(Wav2Vec2PreTrainedModel):
    """Only here to produce a 'facebook/wav2vec2-xls-r-300m'-like checkpoint."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wav2vec2 = Wav2Vec2Model(config)
        self.project_hid = nn.Linear(config.hidden_size, 8)
        self.project_q = nn.Linear(8, 8)


class Wav2Vec2ForCTC(Wav2Vec2PreTrainedModel):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wav2vec2 = Wav2Vec2Model(config)
        self.dropout = nn.Dropout(config.final_dropout)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size)

    def freeze_feature_encoder(self):
        self.wav2vec2.feature_extractor._freeze_parameters()

    def forward(self, input_values, attention_mask=None, labels=None):
        hidden_states = self.wav2vec2(input_values, attention_mask=attention_mask)
        logits = self.lm_head(self.dropout(hidden_states))
        loss = None
        if labels is not None:
            if labels.max() >= self.config.vocab_size:
                raise ValueError(f"Label values must be <= vocab_size: {self.config.vocab_size}")
            attention_mask = (attention_mask if attention_mask is not None
                              else torch.ones_like(input_values, dtype=torch.long))
            input_lengths = self._get_feat_extract_output_lengths(attention_mask.sum(-1)).to(torch.long)
            # assuming that padded tokens are filled with -100 when not being attended to
            labels_mask = labels >= 0
            target_lengths = labels_mask.sum(-1)
            flattened_targets = labels.masked_select(labels_mask)
            log_probs = F.log_softmax(logits, dim=-1, dtype=torch.float32).transpose(0, 1)
            with torch.backends.cudnn.flags(enabled=False):
                loss = F.ctc_loss(log_probs, flattened_targets, input_lengths, target_lengths,
                                  blank=self.config.pad_token_id, reduction=self.config.ctc_loss_reduction,
                                  zero_infinity=self.config.ctc_zero_infinity)
        return loss, logits


# ---- DataCollatorCTCWithPadding from the blog (stand-in for the processor's pad()) ----
def data_collator(features):
    max_audio = max(len(f["input_values"]) for f in features)
    max_label = max(len(f["labels"]) for f in features)
    input_values = torch.zeros(len(features), max_audio)
    attention_mask = torch.zeros(len(features), max_audio, dtype=torch.long)
    label_ids = torch.zeros(len(features), max_label, dtype=torch.long)
    label_mask = torch.zeros(len(features), max_label, dtype=torch.long)
    for i, f in enumerate(features):
        input_values[i, :len(f["input_values"])] = f["input_values"]
        attention_mask[i, :len(f["input_values"])] = 1
        label_ids[i, :len(f["labels"])] = f["labels"]
        label_mask[i, :len(f["labels"])] = 1
    # replace padding with -100 to ignore loss correctly
    labels = label_ids.masked_fill(label_mask.ne(1), -100)
    return dict(input_values=input_values, attention_mask=attention_mask, labels=labels)


# ---- transformers.trainer_pt_utils.get_parameter_names (stand-in) ----
def get_parameter_names(model, forbidden_layer_types):
    result = []
    for name, child in model.named_children():
        result += [f"{name}.{n}" for n in get_parameter_names(child, forbidden_layer_types)
                   if not isinstance(child, tuple(forbidden_layer_types))]
    result += list(model._parameters.keys())
    return result


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    config = Wav2Vec2Config()
    checkpoint = Wav2Vec2ForPreTraining(config).state_dict()
    # Wav2Vec2ForCTC.from_pretrained("facebook/wav2vec2-xls-r-300m", attention_dropout=0.0, hidden_dropout=0.0,
    #     feat_proj_dropout=0.0, mask_time_prob=0.05, layerdrop=0.0, ctc_loss_reduction="mean", ...)
    config = Wav2Vec2Config(attention_dropout=0.0, hidden_dropout=0.0, feat_proj_dropout=0.0, mask_time_prob=0.05,
                            layerdrop=0.0, ctc_loss_reduction="mean")
    model = Wav2Vec2ForCTC.from_pretrained(checkpoint, config)
    model.freeze_feature_encoder()

    # tiny "common voice": normalised waveforms of 300-400 samples and 3-6 character labels
    dataset = []
    for _ in range(12):
        n = int(torch.randint(300, 400, ()).item())
        wav = torch.randn(n)
        dataset.append({"input_values": (wav - wav.mean()) / (wav.std() + 1e-7),
                        "labels": torch.randint(1, config.vocab_size, (int(torch.randint(3, 7, ()).item()),))})
    batches = [data_collator(dataset[i:i + 3]) for i in range(0, len(dataset), 3)]

    # Trainer.create_optimizer: decay / no-decay groups over the parameters that require grad
    decay_parameters = get_parameter_names(model, [nn.LayerNorm])
    decay_parameters = [name for name in decay_parameters if "bias" not in name]
    optimizer_grouped_parameters = [
        {"params": [p for n, p in model.named_parameters() if (n in decay_parameters and p.requires_grad)],
         "weight_decay": 0.005},
        {"params": [p for n, p in model.named_parameters() if (n not in decay_parameters and p.requires_grad)],
         "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=3e-3)
    num_training_steps, warmup_steps, max_grad_norm, gradient_accumulation_steps = 8, 2, 1.0, 1
    lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: (s + 1) / warmup_steps if s < warmup_steps
        else max(0.0, (num_training_steps - s) / (num_training_steps - warmup_steps)))

    tr_loss = torch.tensor(0.0)
    model.zero_grad()
    model.train()
    for step in range(num_training_steps):
        inputs = batches[step % len(batches)]
        # Trainer.training_step
        loss, _ = model(**inputs)
        loss = loss / gradient_accumulation_steps
        loss.backward()
        tr_loss_step = loss.detach()
        tr_loss += tr_loss_step
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        lr_scheduler.step()
        model.zero_grad()
        # Trainer._maybe_log_save_evaluate
        tr_loss_scalar = tr_loss.mean().item()
        tr_loss -= tr_loss
        print(f"step {step} loss {tr_loss_scalar:.6f}")

    model.eval()
    with torch.no_grad():
        _, logits = model(batches[0]["input_values"], attention_mask=batches[0]["attention_mask"])
        pred_ids = torch.argmax(logits, dim=-1)
    print("pred ids", pred_ids[0, :10].tolist())

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
