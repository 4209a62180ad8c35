"""skJack/LTW issue #1 "the learned weight w update by meta_train set or meta_test set",
https://github.com/skJack/LTW/issues/1 (code: train.py, train()): LTW (Learning To Weight, face-forgery
detection) learns per-sample loss weights with a weighting network `fnet`, Meta-Weight-Net style: a virtual
step of the detector on the fnet-weighted training loss gives theta', the meta loss of theta' on the meta
domain should train fnet through that step, and the real step uses fnet's weights under no_grad. The reporter
points out that theta' does not contain w: the weights f_lambda_norm = sigmoid(fnet(feature)) are computed but
left out of the inner loss l_f_model (plain mean of the cost), and the only other use of fnet is under
torch.no_grad(). So fnet's parameters take part in no loss, get grad None, and optimizer_fnet.step() never
changes them. Fix (the paper's Eq. 4-6): weight the inner loss with the learned weights,
l_f_model = torch.sum(cost_v * f_lambda_norm) / len(cost_v) + lamda * compact_loss.
network.meta_models (copyModel / update_params, a virtual SGD step here instead of the repo's 'adam'
solver), FNet, CompactLoss and the data are short stand-ins; train() keeps the repo's lines."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)

metalr, lamda, alpha = 0.1, 0.1, 1.0


# --- network stand-ins: a detector returning (logit, feature), its MetaModule copy, FNet --------------
class Detector(nn.Module):
    def __init__(self, in_dim=16, num_ftrs=8):
        super().__init__()
        self.num_ftrs = num_ftrs
        self.body = nn.Sequential(nn.Linear(in_dim, num_ftrs), nn.ReLU())
        self.fc = nn.Linear(num_ftrs, 1)

    def params(self):
        return self.parameters()

    def forward(self, x):
        feature = self.body(x)
        return self.fc(feature), feature


class MetaDetector:
    """The MetaModule copy: holds the virtual weights theta' and runs the detector at them."""
    def __init__(self):
        self.net = Detector().requires_grad_(False)
        self.weights = None

    def copyModel(self, model):
        self.weights = dict(model.named_parameters())

    def update_params(self, lr_inner, source_params, solver='sgd'):
        self.weights = {n: w - lr_inner * g for (n, w), g in zip(self.weights.items(), source_params)}

    def __call__(self, x):
        return torch.func.functional_call(self.net, self.weights, (x,))


def model_selection(model_name='toy', num_classes=1, pretained=False):
    return MetaDetector()


class FNet(nn.Module):
    def __init__(self, num_ftrs):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(num_ftrs, 8), nn.ReLU(), nn.Linear(8, 1))

    def params(self):
        return self.parameters()

    def forward(self, feature):
        return self.fc(feature)


class CompactLoss(nn.Module):
    def forward(self, output, targets):
        real = output[targets == 0]
        return ((real - real.mean()) ** 2).mean() if real.numel() > 1 else output.sum() * 0


def model_forward(image, model, post_function=nn.Sigmoid(), feat=False):
    output, feature = model(image)
    output = post_function(output)
    output = output.squeeze()
    prediction = (output >= 0.5).float()
    if feat == False:
        return prediction, output
    else:
        return prediction, output, feature


# --- train.py, train() -----------------------------------------------------------------------------------
def train(model, optimizer, fnet, optimizer_fnet, train_dataloader, criterion_oc, device):
    criterion_norm = torch.nn.BCELoss().to(device)
    criterion = torch.nn.BCELoss(reduction='none').to(device)
    meta_lr = metalr

    for i, datas in enumerate(train_dataloader):
        images = datas[0].to(device)
        targets = datas[1].float().to(device)

        meta_model = model_selection(model_name='toy', num_classes=1, pretained=False)
        # to get theta'
        meta_model.copyModel(model)
        prediction, output, feature = model_forward(images, model, feat=True)
        compact_loss = criterion_oc(output, targets)

        cost = criterion(output, targets)
        cost_v = torch.reshape(cost, (len(cost), 1))

        f_lambda = fnet(feature)

        f_lambda_norm = nn.Sigmoid()(f_lambda)

        l_f_model = torch.sum(cost_v * f_lambda_norm)/len(cost_v) + lamda * compact_loss

        model.zero_grad()
        grads = torch.autograd.grad(l_f_model, (model.params()), create_graph=True)
        # Virtual update model
        meta_model.update_params(lr_inner=meta_lr, source_params=grads, solver='sgd')

        del grads
        # use opposite image
        opposite_images = datas[2].to(device)
        opposite_targets = (targets-1)*-1
        meta_images = opposite_images
        meta_targets = opposite_targets

        prediction_meta, output_mata = model_forward(meta_images, meta_model)
        l_g_meta = criterion_norm(output_mata, meta_targets)
        with torch.no_grad():
            w_new = fnet(feature)
            w_new_norm = nn.Sigmoid()(w_new)

        loss = torch.sum(cost_v * (w_new_norm+1))/len(cost_v)

        loss_add = loss + alpha*l_g_meta + lamda*compact_loss

        optimizer.zero_grad()
        optimizer_fnet.zero_grad()
        loss_add.backward()
        optimizer.step()
        optimizer_fnet.step()


model = Detector()
fnet = FNet(model.num_ftrs)
optimizer = torch.optim.Adam(model.params(), lr=1e-2)
optimizer_fnet = torch.optim.Adam(fnet.params(), lr=1e-2)
loader = [(torch.randn(8, 16), torch.randint(0, 2, (8,)), torch.randn(8, 16)) for _ in range(4)]
fnet_before = [p.detach().clone() for p in fnet.parameters()]

train(model, optimizer, fnet, optimizer_fnet, loader, CompactLoss(), "cpu")

print("fnet grad is None:", all(p.grad is None for p in fnet.parameters()))
print("fnet changed:", any(not torch.equal(a, p) for a, p in zip(fnet_before, fnet.parameters())))
