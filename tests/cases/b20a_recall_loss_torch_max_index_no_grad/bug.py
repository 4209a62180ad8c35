"""Recall-Loss-PyTorch (shuaizzZ/Recall-Loss-PyTorch#1, https://github.com/shuaizzZ/Recall-Loss-PyTorch/issues/1,
in Chinese): "max操作反向传播没有梯度" - training a segmentation net with RecallLoss fails in loss.backward() with
"element 0 of tensors does not require grad and does not have a grad_fn".
Why: RecallLoss.forward takes the class index `_, predict = torch.max(input, 1)` and one-hot encodes it with
scatter_; the index of a max carries no gradient, so recall (and the loss) is a constant of the logits.
Fix (the author's reply): use the softmax probabilities of the logits as a soft one-hot prediction instead of the
argmax index. (.cuda() calls of recall_loss.py dropped to run on CPU.)"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class RecallLoss(nn.Module):
    """ An unofficial implementation of
        <Recall Loss for Imbalanced Image Classification and Semantic Segmentation>
        recall = TP / (TP + FN)
    """
    def __init__(self, weight=None):
        super(RecallLoss, self).__init__()
        if weight is not None:
            weight = torch.Tensor(weight)
            self.weight = weight / torch.sum(weight) # Normalized weight
        self.smooth = 1e-5

    def forward(self, input, target):
        N, C = input.size()[:2]
        _, predict = torch.max(input, 1)# # (N, C, *) ==> (N, 1, *)  # <- non_differentiable

        predict = predict.view(N, 1, -1) # (N, 1, *)
        target = target.view(N, 1, -1) # (N, 1, *)
        last_size = target.size(-1)

        ## convert predict & target (N, 1, *) into one hot vector (N, C, *)
        predict_onehot = torch.zeros((N, C, last_size)) # (N, 1, *) ==> (N, C, *)
        predict_onehot.scatter_(1, predict, 1) # (N, C, *)
        target_onehot = torch.zeros((N, C, last_size)) # (N, 1, *) ==> (N, C, *)
        target_onehot.scatter_(1, target, 1) # (N, C, *)

        true_positive = torch.sum(predict_onehot * target_onehot, dim=2)  # (N, C)
        total_target = torch.sum(target_onehot, dim=2)  # (N, C)
        ## Recall = TP / (TP + FN)
        recall = (true_positive + self.smooth) / (total_target + self.smooth)  # (N, C)

        if hasattr(self, 'weight'):
            if self.weight.type() != input.type():
                self.weight = self.weight.type_as(input)
                recall = recall * self.weight * C  # (N, C)
        recall_loss = 1 - torch.mean(recall)  # 1

        return recall_loss


torch.manual_seed(0)
num_classes = 3
net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, num_classes, 1))
criterion = RecallLoss(weight=[1, 1, 1])
optimizer = torch.optim.SGD(net.parameters(), lr=0.5)
images = torch.randn(2, 3, 8, 8)
labels = torch.randint(0, num_classes, (2, 8, 8))
before = net[2].weight.detach().clone()
for step in range(5):
    optimizer.zero_grad()
    loss = criterion(net(images), labels)
    loss.backward()
    optimizer.step()
    print(f"step {step} recall loss {loss.item():.4f}")
print("weights changed:", not torch.equal(before, net[2].weight))
