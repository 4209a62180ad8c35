# `trainable` and `requires_grad` have no effect in `BertForClassification` and `BertPooler`
# https://github.com/allenai/allennlp/issues/2927  (fixed by PR https://github.com/allenai/allennlp/pull/2932)
# What went wrong: the config froze BERT through the token embedder ("bert-pretrained",
# requires_grad: false), and the BertPooler seq2vec encoder, built on the same cached BertModel,
# was given requires_grad: true so that the pooler would be fine-tuned. BertPooler wrote
# `self.pooler.requires_grad = requires_grad`, which only sets a plain Python attribute on the
# nn.Module; the pooler's parameters stayed frozen and got no gradient.
# Fix (PR #2932): loop over the parameters: `for param in self.pooler.parameters(): param.requires_grad = requires_grad`.
import torch
import torch.nn as nn

torch.manual_seed(0)


# ---- pytorch_pretrained_bert.BertModel, tiny ------------------------------------------------
class BertConfig:
    def __init__(self, vocab_size=50, hidden_size=16, num_hidden_layers=2):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers


class BertLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size)

    def forward(self, hidden_states):
        return self.LayerNorm(hidden_states + torch.tanh(self.dense(hidden_states)))


class BertPoolerLayer(nn.Module):  # pytorch_pretrained_bert.modeling.BertPooler
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        first_token_tensor = hidden_states[:, 0]
        return self.activation(self.dense(first_token_tensor))


class BertModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.encoder = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])
        self.pooler = BertPoolerLayer(config)

    def forward(self, input_ids):
        hidden = self.embeddings(input_ids)
        all_encoder_layers = []
        for layer in self.encoder:
            hidden = layer(hidden)
            all_encoder_layers.append(hidden)
        return all_encoder_layers, self.pooler(hidden)


class PretrainedBertModel:
    """allennlp.modules.token_embedders.bert_token_embedder.PretrainedBertModel: a cache, so the
    token embedder and the BertPooler get the *same* BertModel instance."""
    _cache = {}

    @classmethod
    def load(cls, model_name, cache_model=True):
        if model_name in cls._cache:
            return cls._cache[model_name]
        model = BertModel(BertConfig())  # stands in for BertModel.from_pretrained(model_name)
        if cache_model:
            cls._cache[model_name] = model
        return model


# ---- allennlp modules ---------------------------------------------------------------------------
class PretrainedBertEmbedder(nn.Module):
    def __init__(self, pretrained_model, requires_grad=False, top_layer_only=True):
        super().__init__()
        self.bert_model = PretrainedBertModel.load(pretrained_model)
        for param in self.bert_model.parameters():
            param.requires_grad = requires_grad
        self.output_dim = self.bert_model.config.hidden_size

    def forward(self, input_ids):
        all_encoder_layers, _ = self.bert_model(input_ids)
        return all_encoder_layers[-1]


class BertPooler(nn.Module):  # allennlp.modules.seq2vec_encoders.bert_pooler.BertPooler
    def __init__(self, pretrained_model, requires_grad=True):
        super().__init__()
        if isinstance(pretrained_model, str):
            model = PretrainedBertModel.load(pretrained_model)
        else:
            model = pretrained_model
        self.pooler = model.pooler
        self.pooler.requires_grad = requires_grad  # <- autograd_error
        self._embedding_dim = model.config.hidden_size

    def get_output_dim(self):
        return self._embedding_dim

    def forward(self, tokens, mask=None):
        return self.pooler(tokens)


class BasicClassifier(nn.Module):  # allennlp.models.basic_classifier.BasicClassifier
    def __init__(self, text_field_embedder, seq2vec_encoder, num_labels):
        super().__init__()
        self._text_field_embedder = text_field_embedder
        self._seq2vec_encoder = seq2vec_encoder
        self._classification_layer = nn.Linear(seq2vec_encoder.get_output_dim(), num_labels)
        self._loss = nn.CrossEntropyLoss()

    def forward(self, tokens, label=None):
        embedded_text = self._text_field_embedder(tokens)
        embedded_text = self._seq2vec_encoder(embedded_text)
        logits = self._classification_layer(embedded_text)
        output_dict = {"logits": logits}
        if label is not None:
            output_dict["loss"] = self._loss(logits, label)
        return output_dict


# config: allennlp/tests/fixtures/bert/bert_pooler.jsonnet with "requires_grad": true on the pooler
bert_model = "bert-base-uncased"
model = BasicClassifier(
    text_field_embedder=PretrainedBertEmbedder(bert_model, requires_grad=False),
    seq2vec_encoder=BertPooler(bert_model, requires_grad=True),
    num_labels=2,
)
parameters = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.Adam(parameters, lr=1e-3)

tokens = torch.randint(0, 50, (4, 7))
label = torch.randint(0, 2, (4,))
for step in range(3):
    optimizer.zero_grad()
    loss = model(tokens, label)["loss"]
    loss.backward()
    optimizer.step()

print("Number of trainable parameters:", sum(p.numel() for p in parameters))
grad = model._seq2vec_encoder.pooler.dense.weight.grad
print("pooler.dense.weight.grad:", grad if grad is None else grad.norm().item())
