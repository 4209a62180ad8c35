# Report: TinyLLaVA/TinyLLaVA_Factory issue #17
#   "Why is the forward method of the Vision Encoder decorated with @torch.no_grad?"
#   https://github.com/TinyLLaVA/TinyLLaVA_Factory/issues/17
# What went wrong: the training arguments offer --tune_vision_tower / tune_entire_model,
#   and unlock_vit() sets requires_grad=True on every vision-tower parameter, but
#   SigLipVisionTower.forward (and CLIPVisionTower.forward) kept LLaVA's
#   @torch.no_grad() decorator, so the image features carry no graph back into the
#   tower: its parameters get no gradient and are never fine-tuned.
# Fix (maintainer, baichuanzhou): "the opensourced version did not comment the no_grad
#   out. We have updated the correct version." -> the decorator became `# @torch.no_grad()`.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SigLipVisionConfig:
    hidden_size = 32
    num_hidden_layers = 3
    num_attention_heads = 4
    intermediate_size = 64
    image_size = 16
    patch_size = 4
    num_channels = 3


class SigLipVisionEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.patch_embedding = nn.Conv2d(config.num_channels, config.hidden_size,
                                         kernel_size=config.patch_size, stride=config.patch_size)
        self.num_patches = (config.image_size // config.patch_size) ** 2
        self.position_embedding = nn.Embedding(self.num_patches, config.hidden_size)
        self.register_buffer("position_ids", torch.arange(self.num_patches).expand((1, -1)), persistent=False)

    def forward(self, pixel_values):
        patch_embeds = self.patch_embedding(pixel_values)
        embeddings = patch_embeds.flatten(2).transpose(1, 2)
        return embeddings + self.position_embedding(self.position_ids)


class SigLipEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(config.hidden_size, config.num_attention_heads,
                                       config.intermediate_size, dropout=0.0, batch_first=True)
            for _ in range(config.num_hidden_layers)])

    def forward(self, inputs_embeds):
        encoder_states = ()
        hidden_states = inputs_embeds
        for encoder_layer in self.layers:
            encoder_states = encoder_states + (hidden_states,)
            hidden_states = encoder_layer(hidden_states)
        encoder_states = encoder_states + (hidden_states,)
        return hidden_states, encoder_states


class SigLipVisionTransformer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = SigLipVisionEmbeddings(config)
        self.encoder = SigLipEncoder(config)

    def forward(self, pixel_values, output_hidden_states=True):
        hidden_states = self.embeddings(pixel_values)
        last_hidden_state, hidden_states = self.encoder(hidden_states)
        return {'last_hidden_state': last_hidden_state, 'hidden_states': hidden_states}


class SigLipVisionModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.vision_model = SigLipVisionTransformer(config)

    def forward(self, pixel_values, output_hidden_states=True):
        return self.vision_model(pixel_values, output_hidden_states=output_hidden_states)


class SigLipVisionTower(nn.Module):
    def __init__(self, vision_tower, vision_tower_cfg, delay_load=False):
        super().__init__()
        self.is_loaded = False
        self.config = SigLipVisionConfig()
        self.vision_tower_name = vision_tower
        self.load_model()

    def load_model(self):
        if self.is_loaded:
            return
        self.vision_tower = SigLipVisionModel(self.config)   # from_pretrained(...) in the repo
        self.vision_tower.requires_grad_(False)
        self.is_loaded = True

    @torch.no_grad()  # <- no_grad
    def forward(self, images):
        image_forward_outs = self.vision_tower(images.to(device=self.device, dtype=self.dtype),
                                               output_hidden_states=True)
        image_features = image_forward_outs['hidden_states'][-1].to(images.dtype)
        return image_features

    @property
    def dtype(self):
        for p in self.vision_tower.parameters():
            return p.dtype

    @property
    def device(self):
        for p in self.vision_tower.parameters():
            return p.device

    @property
    def hidden_size(self):
        return self.config.hidden_size


class TinyLlavaForCausalLM(nn.Module):
    """llava_arch: vision_tower -> mm_projector -> prepended to the LLM's token embeddings."""
    def __init__(self, vocab=40, hidden=48):
        super().__init__()
        self.vision_tower = SigLipVisionTower('google/siglip-so400m-patch14-384', None)
        self.mm_projector = nn.Sequential(nn.Linear(self.vision_tower.hidden_size, hidden), nn.GELU(),
                                          nn.Linear(hidden, hidden))
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList([nn.TransformerEncoderLayer(hidden, 4, hidden * 2, dropout=0.0,
                                                                batch_first=True) for _ in range(2)])
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def get_vision_tower(self):
        return self.vision_tower

    def encode_images(self, images):
        image_features = self.get_vision_tower()(images)
        image_features = self.mm_projector(image_features)
        return image_features

    def forward(self, input_ids, images, labels):
        image_features = self.encode_images(images)
        inputs_embeds = torch.cat([image_features, self.embed_tokens(input_ids)], dim=1)
        h = inputs_embeds
        for layer in self.layers:
            h = layer(h)
        logits = self.lm_head(h[:, image_features.shape[1]:])
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))


class ModelArguments:
    tune_entire_model = True
    tune_vision_tower = True
    tune_vit_from_layer = -1


class TrainingArguments:
    learning_rate = 1e-3
    vision_tower_lr = None


def unlock_vit(training_args, model_args, vision_tower):
    for n, p in vision_tower.named_parameters():
        if model_args.tune_vit_from_layer != -1:
            if 'vision_tower.vision_model.encoder.layers.' in n:
                layer_id = int(n.split('vision_tower.vision_model.encoder.layers.')[-1].split('.')[0])
                p.requires_grad = layer_id >= model_args.tune_vit_from_layer
            else:
                p.requires_grad = False
        else:
            p.requires_grad = True


if __name__ == '__main__':
    model_args, training_args = ModelArguments(), TrainingArguments()
    model = TinyLlavaForCausalLM()
    vision_tower = model.get_vision_tower()
    if model_args.tune_entire_model:
        model.requires_grad_(True)
        unlock_vit(training_args, model_args, vision_tower)

    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                  lr=training_args.learning_rate)
    images = torch.randn(2, 3, 16, 16)
    input_ids = torch.randint(0, 40, (2, 8))
    for step in range(3):
        loss = model(input_ids, images, labels=input_ids)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print('step', step, 'loss', round(loss.item(), 4))

    w = vision_tower.vision_tower.vision_model.encoder.layers[-1].linear2.weight
    print('vision tower requires_grad:', w.requires_grad)
    print('vision tower last-layer grad:', w.grad)
