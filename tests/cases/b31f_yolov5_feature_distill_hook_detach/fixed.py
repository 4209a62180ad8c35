"""Syencil/mobile-yolov5-pruning-distillation issue #83 (in Chinese),
https://github.com/Syencil/mobile-yolov5-pruning-distillation/issues/83: training with output-based plus
feature-based distillation gave the same results as output-based distillation alone ("every epoch's mAP and each
loss are basically identical"), like the bug the README admits for an earlier commit ("a bug made the accuracy not
change"). The reporter then found the cause himself: "找到了原因，去除.detach()" (found it: remove the .detach()).
Here the student's feature maps are taken with forward hooks (train.py's get_activation) and the hook stores
`outputs.detach()`, so the feature-distillation loss is a constant: it is added to the loss, but no gradient from
it reaches the student backbone, which ends bit-for-bit where output-only distillation leaves it.
The thread does not show the reporter's code: where exactly the .detach() sat is inferred from train.py's hooks.
Fix: store `outputs` (the teacher stays under torch.no_grad()). MobileNet-YOLO and YOLOv5s are small stand-ins;
T_Converter is the ReLU6 the README describes for strategy 2.1; data are random."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


def make_net(c):
    return nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.ReLU6(), nn.Conv2d(c, 16, 3, 2, 1), nn.ReLU6(),
                         nn.Conv2d(16, 16, 3, 1, 1), nn.ReLU6(), nn.Conv2d(16, 3 * 7, 1))


def compute_distillation_output_loss(p, t_p):
    return F.mse_loss(p, t_p)


def compute_distillation_feature_loss(s_f, t_f, f_weight=0.5):
    return sum(F.mse_loss(s, t) for s, t in zip(s_f, t_f)) * f_weight


def train(d_feature):
    torch.manual_seed(0)
    model = make_net(8)  # S-model (mobilev2-yolo5s stand-in)
    t_model = make_net(32)  # T-model (yolov5s stand-in)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.937, nesterov=True)

    activation = {}

    def get_activation(name):
        def hook(model, inputs, outputs):
            activation[name] = outputs
        return hook

    hooks = [model[3].register_forward_hook(get_activation("s_f1")),
             model[5].register_forward_hook(get_activation("s_f2")),
             t_model[3].register_forward_hook(get_activation("t_f1")),
             t_model[5].register_forward_hook(get_activation("t_f2"))]
    T_Converter_1, T_Converter_2 = nn.ReLU6(), nn.ReLU6()

    for i in range(4):
        imgs, targets = torch.rand(2, 3, 16, 16), torch.randn(2, 21, 4, 4)
        pred = model(imgs)
        with torch.no_grad():
            t_pred = t_model(imgs)
        s_f = (activation["s_f1"], activation["s_f2"])
        t_f = [T_Converter_1(activation["t_f1"]), T_Converter_2(activation["t_f2"])]
        loss = F.mse_loss(pred, targets)  # compute_loss stand-in
        loss = loss + compute_distillation_output_loss(pred, t_pred)
        if d_feature:
            loss = loss + compute_distillation_feature_loss(s_f, t_f)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    for h in hooks:
        h.remove()
    return [p.detach().clone() for p in model.parameters()]


w_output_only = train(d_feature=False)
w_output_feature = train(d_feature=True)
same = all(torch.equal(a, b) for a, b in zip(w_output_only, w_output_feature))
print("student after output+feature distillation identical to output-only run:", same)
