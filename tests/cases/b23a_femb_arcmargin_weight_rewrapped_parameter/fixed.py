"""jonasgrebe/pt-femb-face-embeddings, issue #3 "Found two flaws in ArcMarginHeader",
https://github.com/jonasgrebe/pt-femb-face-embeddings/issues/3: in ArcMarginHeader.forward,
`self.linear.weight = torch.nn.Parameter(self.normalize(self.linear.weight))` -- "You need to initialize the
weight parameter when initializing the header class instead of initializing it again in every forward pass."
At run time every forward replaces the header's weight by a new leaf Parameter; the optimizer still holds the
weight made in __init__, which gets grad None from the first step on and never changes (the new leaves get the
gradients but are in no optimizer), so the ArcFace class centres stay at their normalised initial values.
Fix: keep the registered Parameter and normalise it functionally in forward (the author's fix uses
F.linear(F.normalize(input), F.normalize(self.weight))). The issue's second flaw (theta clamped to [-1, 1])
is left out so this case holds one bug. The iresnet backbone is a small Linear stand-in."""
import torch


class ArcMarginHeader(torch.nn.Module):
    """ ArcMarginHeader class"""

    def __init__(self, in_features, out_features, s, m1=1, m2=0, m3=0):
        super(ArcMarginHeader, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.s = s
        self.m1 = m1
        self.m2 = m2
        self.m3 = m3
        self.linear = torch.nn.Linear(in_features=in_features, out_features=out_features, bias=False)
        self.normalize = torch.nn.functional.normalize
        self.epsilon = 1e-6

    def forward(self, input, label):
        # multiply normed features (input) and normed weights to obtain cosine of theta (logits)
        weight = self.normalize(self.linear.weight)
        logits = torch.nn.functional.linear(self.normalize(input), weight).clamp(-1 + self.epsilon, 1 - self.epsilon)

        # apply arccos to get theta
        theta = torch.acos(logits)

        # add angular margin (m) to theta and transform back by cos
        target_logits = torch.cos(self.m1 * theta + self.m2) - self.m3

        # derive one-hot encoding for label
        one_hot = torch.zeros(logits.size(), device=input.device)
        one_hot.scatter_(1, label.view(-1, 1).long(), 1.0)

        # build the output logits
        output = one_hot * target_logits + (1.0 - one_hot) * logits
        # feature re-scaling
        output *= self.s
        return output


class ArcFaceHeader(ArcMarginHeader):
    """ ArcFaceHeader class"""

    def __init__(self, in_features, out_features, s=64.0, m=0.5):
        super(ArcFaceHeader, self).__init__(in_features=in_features, out_features=out_features, s=s, m2=m)


class FaceEmbeddingModel:
    def __init__(self, backbone, header, loss):
        self.backbone = backbone
        self.header = header
        self.loss = loss
        self.params = [{'params': backbone.parameters()}, {'params': header.parameters()}]

    def fit(self, batches, optimizer):
        self.header.train()
        self.backbone.train()
        for step, (inputs, labels) in enumerate(batches):
            features = self.backbone(inputs)
            features = features.view(features.shape[0], features.shape[1])
            outputs = self.header(features, labels)
            loss_value = self.loss(outputs, labels)
            optimizer.zero_grad()
            loss_value.backward()
            optimizer.step()
            print(f"Step {step} - Train_Loss: {loss_value.item():.4f}")


torch.manual_seed(0)
embed_dim = 16
backbone = torch.nn.Sequential(torch.nn.Linear(32, embed_dim), torch.nn.PReLU(), torch.nn.Linear(embed_dim, embed_dim))
header = ArcFaceHeader(in_features=embed_dim, out_features=5)
loss = torch.nn.CrossEntropyLoss()
face_model = FaceEmbeddingModel(backbone=backbone, header=header, loss=loss)
optimizer = torch.optim.SGD(params=face_model.params, lr=1e-2, momentum=0.9, weight_decay=5e-4)
centres = optimizer.param_groups[1]['params'][0]
before = centres.detach().clone()
batches = [(torch.randn(8, 32), torch.randint(0, 5, (8,))) for _ in range(4)]
face_model.fit(batches, optimizer)
print("header weight in optimizer: grad is None:", centres.grad is None,
      "- changed:", not torch.equal(before, centres.detach()))
