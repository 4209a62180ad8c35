# Compact Convolutional Transformer (CCT) port: the positional embeddings are
# computed once, when the model is built, from a constant `arange`, and that
# single tensor is added to the tokens on every training step.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

image_size = 16
projection_dim = 32
num_heads = 2
num_classes = 10


class CCTTokenizer(nn.Module):
    def __init__(self, num_output_channels=(16, projection_dim)):
        super().__init__()
        layers = []
        in_ch = 3
        for out_ch in num_output_channels:
            layers += [nn.Conv2d(in_ch, out_ch, 3, 1, padding=1, bias=False), nn.ReLU(),
                       nn.MaxPool2d(3, 2, padding=1)]
            in_ch = out_ch
        self.conv_model = nn.Sequential(*layers)

    def forward(self, images):
        outputs = self.conv_model(images)                 # B, C, H, W
        return outputs.flatten(2).transpose(1, 2)         # B, H*W, C

    def positional_embedding(self, image_size):
        dummy_outputs = self.forward(torch.ones(1, 3, image_size, image_size))
        sequence_length = dummy_outputs.shape[1]
        embed_layer = nn.Embedding(sequence_length, dummy_outputs.shape[-1])
        return embed_layer, sequence_length


class SequencePooling(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = nn.Linear(projection_dim, 1)

    def forward(self, x):
        attention_weights = F.softmax(self.attention(x), dim=1)
        return torch.matmul(attention_weights.transpose(1, 2), x).squeeze(-2)


class CCT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokenizer = CCTTokenizer()
        self.pos_embed, seq_length = self.tokenizer.positional_embedding(image_size)
        self.register_buffer("positions", torch.arange(0, seq_length))
        self.norm1 = nn.LayerNorm(projection_dim)
        self.attn = nn.MultiheadAttention(projection_dim, num_heads, batch_first=True)
        self.norm2 = nn.LayerNorm(projection_dim)
        self.mlp = nn.Sequential(nn.Linear(projection_dim, projection_dim), nn.GELU(),
                                 nn.Linear(projection_dim, projection_dim))
        self.norm3 = nn.LayerNorm(projection_dim)
        self.pool = SequencePooling()
        self.head = nn.Linear(projection_dim, num_classes)

    def forward(self, images):
        encoded_patches = self.tokenizer(images)
        position_embeddings = self.pos_embed(self.positions)
        encoded_patches = encoded_patches + position_embeddings
        x1 = self.norm1(encoded_patches)
        attention_output, _ = self.attn(x1, x1, x1)
        x2 = attention_output + encoded_patches
        x3 = self.mlp(self.norm2(x2))
        encoded_patches = x3 + x2
        representation = self.norm3(encoded_patches)
        return self.head(self.pool(representation))


model = CCT()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
x_train = torch.rand(8, 3, image_size, image_size)
y_train = torch.randint(0, num_classes, (8,))

for step in range(3):
    optimizer.zero_grad()
    logits = model(x_train)
    loss = F.cross_entropy(logits, y_train, label_smoothing=0.1)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
