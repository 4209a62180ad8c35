# "Fix KL computation" -- IntelLabs/bayesian-torch PR #2 (merged)
# https://github.com/IntelLabs/bayesian-torch/pull/2
#
# What went wrong: in bayesian_torch/models/bayesian/resnet_variational.py the
# ResNet.forward loops over the BasicBlocks of layer1/layer2/layer3, but the
# `kl_sum += kl` line sits after each loop instead of inside it.  The name `kl` is
# rebound by every block, so only the KL of the LAST block of each stage reaches the
# ELBO; the KL terms of every other block are silently dropped.  Their mu/rho
# posterior parameters are still trained by the cross-entropy, but never pulled
# towards the prior.
# Fix (PR #2): indent `kl_sum += kl` into each for-loop.
#
# Plain-torch rewrite of Conv2dReparameterization / LinearReparameterization and
# of the resnet20 used by examples/main_bayesian_cifar.py (random 8x8 inputs).
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.init as init

torch.manual_seed(0)

prior_mu = 0.0
prior_sigma = 1.0
posterior_mu_init = 0.0
posterior_rho_init = -2.0


class BaseVariationalLayer_(nn.Module):
    def kl_div(self, mu_q, sigma_q, mu_p, sigma_p):
        kl = torch.log(sigma_p) - torch.log(sigma_q) + \
            (sigma_q ** 2 + (mu_q - mu_p) ** 2) / (2 * (sigma_p ** 2)) - 0.5
        return kl.mean()


class Conv2dReparameterization(BaseVariationalLayer_):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 prior_mean=0, prior_variance=1, posterior_mu_init=0,
                 posterior_rho_init=-3.0, bias=False):
        super().__init__()
        self.stride = stride
        self.padding = padding
        shape = (out_channels, in_channels, kernel_size, kernel_size)
        self.mu_kernel = nn.Parameter(torch.empty(shape))
        self.rho_kernel = nn.Parameter(torch.empty(shape))
        self.register_buffer('eps_kernel', torch.empty(shape), persistent=False)
        self.register_buffer('prior_weight_mu', torch.full(shape, float(prior_mean)), persistent=False)
        self.register_buffer('prior_weight_sigma', torch.full(shape, float(prior_variance)), persistent=False)
        self.mu_kernel.data.normal_(mean=posterior_mu_init, std=0.1)
        self.rho_kernel.data.normal_(mean=posterior_rho_init, std=0.1)

    def forward(self, input):
        sigma_weight = torch.log1p(torch.exp(self.rho_kernel))
        weight = self.mu_kernel + (sigma_weight * self.eps_kernel.data.normal_())
        kl = self.kl_div(self.mu_kernel, sigma_weight, self.prior_weight_mu, self.prior_weight_sigma)
        out = F.conv2d(input, weight, None, self.stride, self.padding)
        return out, kl


class LinearReparameterization(BaseVariationalLayer_):
    def __init__(self, in_features, out_features, prior_mean=0, prior_variance=1,
                 posterior_mu_init=0, posterior_rho_init=-3.0):
        super().__init__()
        self.mu_weight = nn.Parameter(torch.empty(out_features, in_features))
        self.rho_weight = nn.Parameter(torch.empty(out_features, in_features))
        self.register_buffer('eps_weight', torch.empty(out_features, in_features), persistent=False)
        self.register_buffer('prior_weight_mu', torch.full((out_features, in_features), float(prior_mean)), persistent=False)
        self.register_buffer('prior_weight_sigma', torch.full((out_features, in_features), float(prior_variance)), persistent=False)
        self.mu_bias = nn.Parameter(torch.empty(out_features))
        self.rho_bias = nn.Parameter(torch.empty(out_features))
        self.register_buffer('eps_bias', torch.empty(out_features), persistent=False)
        self.register_buffer('prior_bias_mu', torch.full((out_features,), float(prior_mean)), persistent=False)
        self.register_buffer('prior_bias_sigma', torch.full((out_features,), float(prior_variance)), persistent=False)
        self.mu_weight.data.normal_(mean=posterior_mu_init, std=0.1)
        self.rho_weight.data.normal_(mean=posterior_rho_init, std=0.1)
        self.mu_bias.data.normal_(mean=posterior_mu_init, std=0.1)
        self.rho_bias.data.normal_(mean=posterior_rho_init, std=0.1)

    def forward(self, input):
        sigma_weight = torch.log1p(torch.exp(self.rho_weight))
        weight = self.mu_weight + (sigma_weight * self.eps_weight.data.normal_())
        kl_weight = self.kl_div(self.mu_weight, sigma_weight, self.prior_weight_mu, self.prior_weight_sigma)
        sigma_bias = torch.log1p(torch.exp(self.rho_bias))
        bias = self.mu_bias + (sigma_bias * self.eps_bias.data.normal_())
        kl_bias = self.kl_div(self.mu_bias, sigma_bias, self.prior_bias_mu, self.prior_bias_sigma)
        out = F.linear(input, weight, bias)
        kl = kl_weight + kl_bias
        return out, kl


def _weights_init(m):
    if isinstance(m, nn.Linear) or isinstance(m, nn.Conv2d):
        init.kaiming_normal_(m.weight)


class LambdaLayer(nn.Module):
    def __init__(self, lambd):
        super(LambdaLayer, self).__init__()
        self.lambd = lambd

    def forward(self, x):
        return self.lambd(x)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1, option='A'):
        super(BasicBlock, self).__init__()
        self.conv1 = Conv2dReparameterization(
            in_channels=in_planes, out_channels=planes, kernel_size=3, stride=stride, padding=1,
            prior_mean=prior_mu, prior_variance=prior_sigma,
            posterior_mu_init=posterior_mu_init, posterior_rho_init=posterior_rho_init, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = Conv2dReparameterization(
            in_channels=planes, out_channels=planes, kernel_size=3, stride=1, padding=1,
            prior_mean=prior_mu, prior_variance=prior_sigma,
            posterior_mu_init=posterior_mu_init, posterior_rho_init=posterior_rho_init, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)

        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = LambdaLayer(lambda x: F.pad(
                x[:, :, ::2, ::2], (0, 0, 0, 0, planes // 4, planes // 4), "constant", 0))

    def forward(self, x):
        kl_sum = 0
        out, kl = self.conv1(x)
        kl_sum += kl
        out = self.bn1(out)
        out = F.relu(out)
        out, kl = self.conv2(out)
        kl_sum += kl
        out = self.bn2(out)
        out += self.shortcut(x)
        out = F.relu(out)
        return out, kl_sum


class ResNet(nn.Module):
    def __init__(self, block, num_blocks, num_classes=10):
        super(ResNet, self).__init__()
        self.in_planes = 16

        self.conv1 = Conv2dReparameterization(
            in_channels=3, out_channels=16, kernel_size=3, stride=1, padding=1,
            prior_mean=prior_mu, prior_variance=prior_sigma,
            posterior_mu_init=posterior_mu_init, posterior_rho_init=posterior_rho_init, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.layer1 = self._make_layer(block, 16, num_blocks[0], stride=1)
        self.layer2 = self._make_layer(block, 32, num_blocks[1], stride=2)
        self.layer3 = self._make_layer(block, 64, num_blocks[2], stride=2)
        self.linear = LinearReparameterization(
            in_features=64, out_features=num_classes,
            prior_mean=prior_mu, prior_variance=prior_sigma,
            posterior_mu_init=posterior_mu_init, posterior_rho_init=posterior_rho_init)

        self.apply(_weights_init)

    def _make_layer(self, block, planes, num_blocks, stride):
        strides = [stride] + [1] * (num_blocks - 1)
        layers = []
        for stride in strides:
            layers.append(block(self.in_planes, planes, stride))
            self.in_planes = planes * block.expansion

        return nn.Sequential(*layers)

    def forward(self, x):
        kl_sum = 0
        out, kl = self.conv1(x)
        kl_sum += kl
        out = self.bn1(out)
        out = F.relu(out)
        for l in self.layer1:
            out, kl = l(out)
        kl_sum += kl  # <- cut_term
        for l in self.layer2:
            out, kl = l(out)
        kl_sum += kl
        for l in self.layer3:
            out, kl = l(out)
        kl_sum += kl

        out = F.avg_pool2d(out, out.size()[3])
        out = out.view(out.size(0), -1)
        out, kl = self.linear(out)
        kl_sum += kl
        return out, kl_sum


def resnet20():
    return ResNet(BasicBlock, [3, 3, 3])


# --- training step as in examples/main_bayesian_cifar.py ---
batch_size = 4
model = resnet20()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

model.train()
for i in range(2):
    input_var = torch.randn(batch_size, 3, 8, 8)
    target_var = torch.randint(0, 10, (batch_size,))
    output, kl = model(input_var)
    cross_entropy_loss = criterion(output, target_var)
    scaled_kl = kl / batch_size
    loss = cross_entropy_loss + scaled_kl

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {i}: ce={cross_entropy_loss.item():.4f} kl={kl.item():.4f} loss={loss.item():.4f}")
