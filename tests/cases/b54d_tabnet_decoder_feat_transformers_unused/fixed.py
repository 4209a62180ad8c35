# What is the intention of this part in TabNetDecoder?  (dreamquark-ai/tabnet #291)
# https://github.com/dreamquark-ai/tabnet/issues/291  (fixed by PR #302 "feat: pretraining matches paper")
# Bug: in TabNetDecoder.forward the output of self.feat_transformers[step_nb] is assigned to x and then
# immediately overwritten by self.reconstruction_layers[step_nb](step_output), so the decoder's
# FeatTransformer (GLU) layers never reach the self-supervised loss and never get a gradient.
# Fix: feed the feature-transformer output into the reconstruction layer (reconstruction(x)).
import numpy as np
import torch
from torch.nn import Linear, BatchNorm1d

torch.manual_seed(0)
np.random.seed(0)


def initialize_non_glu(module, input_dim, output_dim):
    gain_value = np.sqrt((input_dim + output_dim) / np.sqrt(4 * input_dim))
    torch.nn.init.xavier_normal_(module.weight, gain=gain_value)


def initialize_glu(module, input_dim, output_dim):
    gain_value = np.sqrt((input_dim + output_dim) / np.sqrt(input_dim))
    torch.nn.init.xavier_normal_(module.weight, gain=gain_value)


class GBN(torch.nn.Module):
    def __init__(self, input_dim, virtual_batch_size=128, momentum=0.01):
        super(GBN, self).__init__()
        self.virtual_batch_size = virtual_batch_size
        self.bn = BatchNorm1d(input_dim, momentum=momentum)

    def forward(self, x):
        chunks = x.chunk(int(np.ceil(x.shape[0] / self.virtual_batch_size)), 0)
        return torch.cat([self.bn(x_) for x_ in chunks], dim=0)


class GLU_Layer(torch.nn.Module):
    def __init__(self, input_dim, output_dim, fc=None, virtual_batch_size=128, momentum=0.02):
        super(GLU_Layer, self).__init__()
        self.output_dim = output_dim
        self.fc = fc if fc else Linear(input_dim, 2 * output_dim, bias=False)
        initialize_glu(self.fc, input_dim, 2 * output_dim)
        self.bn = GBN(2 * output_dim, virtual_batch_size=virtual_batch_size, momentum=momentum)

    def forward(self, x):
        x = self.bn(self.fc(x))
        return torch.mul(x[:, : self.output_dim], torch.sigmoid(x[:, self.output_dim:]))


class GLU_Block(torch.nn.Module):
    def __init__(self, input_dim, output_dim, n_glu=2, first=False, shared_layers=None,
                 virtual_batch_size=128, momentum=0.02):
        super(GLU_Block, self).__init__()
        self.first = first
        self.n_glu = n_glu
        self.glu_layers = torch.nn.ModuleList()
        fc = shared_layers[0] if shared_layers else None
        self.glu_layers.append(GLU_Layer(input_dim, output_dim, fc=fc,
                                         virtual_batch_size=virtual_batch_size, momentum=momentum))
        for glu_id in range(1, self.n_glu):
            fc = shared_layers[glu_id] if shared_layers else None
            self.glu_layers.append(GLU_Layer(output_dim, output_dim, fc=fc,
                                             virtual_batch_size=virtual_batch_size, momentum=momentum))

    def forward(self, x):
        scale = torch.sqrt(torch.FloatTensor([0.5]).to(x.device))
        if self.first:
            x = self.glu_layers[0](x)
            layers_left = range(1, self.n_glu)
        else:
            layers_left = range(self.n_glu)
        for glu_id in layers_left:
            x = torch.add(x, self.glu_layers[glu_id](x))
            x = x * scale
        return x


class FeatTransformer(torch.nn.Module):
    def __init__(self, input_dim, output_dim, shared_layers, n_glu_independent,
                 virtual_batch_size=128, momentum=0.02):
        super(FeatTransformer, self).__init__()
        if shared_layers is None:
            self.shared = torch.nn.Identity()
            is_first = True
        else:
            self.shared = GLU_Block(input_dim, output_dim, first=True, shared_layers=shared_layers,
                                    n_glu=len(shared_layers), virtual_batch_size=virtual_batch_size,
                                    momentum=momentum)
            is_first = False
        spec_input_dim = input_dim if is_first else output_dim
        self.specifics = GLU_Block(spec_input_dim, output_dim, n_glu=n_glu_independent, first=is_first,
                                   virtual_batch_size=virtual_batch_size, momentum=momentum)

    def forward(self, x):
        return self.specifics(self.shared(x))


class TabNetEncoder(torch.nn.Module):
    """Reduced encoder: one FeatTransformer per step, returns the list of step outputs."""

    def __init__(self, input_dim, n_d=8, n_steps=3, n_independent=2, n_shared=2,
                 virtual_batch_size=128, momentum=0.02):
        super(TabNetEncoder, self).__init__()
        self.n_d = n_d
        self.n_steps = n_steps
        self.initial_bn = BatchNorm1d(input_dim, momentum=0.01)
        shared_feat_transform = torch.nn.ModuleList()
        for i in range(n_shared):
            shared_feat_transform.append(Linear(input_dim if i == 0 else n_d, 2 * n_d, bias=False))
        self.feat_transformers = torch.nn.ModuleList()
        for step in range(n_steps):
            self.feat_transformers.append(FeatTransformer(input_dim, n_d, shared_feat_transform,
                                                          n_glu_independent=n_independent,
                                                          virtual_batch_size=virtual_batch_size,
                                                          momentum=momentum))

    def forward(self, x):
        x = self.initial_bn(x)
        steps_output = []
        for step in range(self.n_steps):
            steps_output.append(torch.relu(self.feat_transformers[step](x)))
        return steps_output


class TabNetDecoder(torch.nn.Module):
    def __init__(self, input_dim, n_d=8, n_steps=3, n_independent=1, n_shared=1,
                 virtual_batch_size=128, momentum=0.02):
        super(TabNetDecoder, self).__init__()
        self.input_dim = input_dim
        self.n_d = n_d
        self.n_steps = n_steps
        self.feat_transformers = torch.nn.ModuleList()
        self.reconstruction_layers = torch.nn.ModuleList()
        if n_shared > 0:
            shared_feat_transform = torch.nn.ModuleList()
            for i in range(n_shared):
                shared_feat_transform.append(Linear(n_d, 2 * n_d, bias=False))
        else:
            shared_feat_transform = None
        for step in range(n_steps):
            transformer = FeatTransformer(n_d, n_d, shared_feat_transform,
                                          n_glu_independent=n_independent,
                                          virtual_batch_size=virtual_batch_size, momentum=momentum)
            self.feat_transformers.append(transformer)
            reconstruction_layer = Linear(n_d, self.input_dim, bias=False)
            initialize_non_glu(reconstruction_layer, n_d, self.input_dim)
            self.reconstruction_layers.append(reconstruction_layer)

    def forward(self, steps_output):
        res = 0
        for step_nb, step_output in enumerate(steps_output):
            x = self.feat_transformers[step_nb](step_output)
            x = self.reconstruction_layers[step_nb](x)
            res = torch.add(res, x)
        return res


class RandomObfuscator(torch.nn.Module):
    def __init__(self, pretraining_ratio):
        super(RandomObfuscator, self).__init__()
        self.pretraining_ratio = pretraining_ratio

    def forward(self, x):
        obfuscated_vars = torch.bernoulli(self.pretraining_ratio * torch.ones(x.shape)).to(x.device)
        masked_input = torch.mul(1 - obfuscated_vars, x)
        return masked_input, obfuscated_vars


class TabNetPretraining(torch.nn.Module):
    def __init__(self, input_dim, pretraining_ratio=0.2, n_d=8, n_steps=3):
        super(TabNetPretraining, self).__init__()
        self.masker = RandomObfuscator(pretraining_ratio)
        self.encoder = TabNetEncoder(input_dim, n_d=n_d, n_steps=n_steps)
        self.decoder = TabNetDecoder(input_dim, n_d=n_d, n_steps=n_steps)

    def forward(self, x):
        embedded_x = x
        masked_x, obf_vars = self.masker(embedded_x)
        steps_out = self.encoder(masked_x)
        res = self.decoder(steps_out)
        return res, embedded_x, obf_vars


def UnsupervisedLoss(y_pred, embedded_x, obf_vars, eps=1e-9):
    errors = y_pred - embedded_x
    reconstruction_errors = torch.mul(errors, obf_vars) ** 2
    batch_means = torch.mean(embedded_x, dim=0)
    batch_means[batch_means == 0] = 1
    batch_stds = torch.std(embedded_x, dim=0) ** 2
    batch_stds[batch_stds == 0] = batch_means[batch_stds == 0]
    features_loss = torch.matmul(reconstruction_errors, 1 / batch_stds)
    nb_reconstructed_variables = torch.sum(obf_vars, dim=1)
    features_loss = features_loss / (nb_reconstructed_variables + eps)
    return torch.mean(features_loss)


# TabNetPretrainer._train_batch, reduced
X = torch.randn(64, 10)
network = TabNetPretraining(input_dim=10)
optimizer = torch.optim.Adam(network.parameters(), lr=2e-2)

for param in network.parameters():
    param.grad = None
output, embedded_x, obf_vars = network(X)
loss = UnsupervisedLoss(output, embedded_x, obf_vars)
loss.backward()
optimizer.step()

glu_fc = network.decoder.feat_transformers[0].specifics.glu_layers[0].fc.weight
print("loss:", loss.item())
g = glu_fc.grad
print("decoder feat_transformers[0] GLU fc grad:", g if g is None else g.norm().item())
