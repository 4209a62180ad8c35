# Unable to train PointNet for segmentation
# https://github.com/torch-points3d/torch-points3d/issues/521  (fixed by PR #529)
# What went wrong: `python train.py task=segmentation model_type=pointnet model_name=PointNet` crashed in
# Trainer._initialize_trainer -> model.instantiate_optimizers(cfg): the PointNet segmentation model
# only built its network (`self.pointnet_seg`) lazily inside set_input() via _build_model(), i.e. on
# the first batch. When the trainer created the optimizer, the model had no parameters yet, so
# torch.optim raised "optimizer got an empty parameter list".
# Fix (PR #529, merged): "instantiate the model during the __init__ function, as opposed to during
# set_input() as done previously".
# Reduced: omegaconf/hydra config replaced by a dict, PointNetSeg is a small shared-MLP + max-pool
# segmentation net, torch_geometric Batch replaced by a tiny Data class, random points and labels.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
IGNORE_LABEL = -1


class Data:
    def __init__(self, pos, x, y, batch):
        self.pos, self.x, self.y, self.batch = pos, x, y, batch

    def to(self, device):
        return self


def flatten_dict(opt):
    return dict(opt)


# ---- torch_points3d/modules/PointNet (reduced) ----------------------------------------------
class PointNetSeg(nn.Module):
    def __init__(self, input_nc, local_nn, global_nn, seg_nn, **kwargs):
        super().__init__()
        self.local_nn = nn.Sequential(nn.Linear(input_nc, local_nn), nn.ReLU())
        self.global_nn = nn.Sequential(nn.Linear(local_nn, global_nn), nn.ReLU())
        self.seg_nn = nn.Linear(local_nn + global_nn, seg_nn)
        self._scatter_pooling = True

    def set_scatter_pooling(self, flag):
        self._scatter_pooling = flag

    def forward(self, x, batch):
        local = self.local_nn(x)
        g = self.global_nn(local)
        num_batches = int(batch.max()) + 1
        pooled = torch.stack([g[batch == b].max(0).values for b in range(num_batches)])
        return self.seg_nn(torch.cat([local, pooled[batch]], -1))


# ---- torch_points3d/models/base_model.py (reduced) -------------------------------------------
class BaseModel(nn.Module):
    def __init__(self, opt):
        super().__init__()
        self.opt = opt
        self.conv_type = opt.get("conv_type", "PARTIAL_DENSE")

    def instantiate_optimizers(self, config):
        self._optimizer = torch.optim.Adam(self.parameters(), lr=config["lr"])

    def get_internal_loss(self):
        return torch.tensor(0.0)

    def optimize_parameters(self, epoch, batch_size):
        self._optimizer.zero_grad()
        self.forward(epoch=epoch)
        self.backward()
        self._optimizer.step()


# ---- torch_points3d/models/segmentation/pointnet.py -------------------------------------------
class PointNet(BaseModel):
    def __init__(self, opt, model_type=None, dataset=None, modules=None):
        super().__init__(opt)
        self._opt = dict(opt["pointnet"])
        self._is_dense = self.conv_type == "DENSE"
        self.visual_names = ["data_visual"]

    def set_input(self, data, device):
        data = data.to(device)
        self.input = data
        if data.x is not None:
            self.input_features = torch.cat([data.pos, data.x], axis=-1)
        else:
            self.input_features = data.pos
        self._build_model()  # <- module_in_forward
        self.labels = data.y
        self.pointnet_seg.set_scatter_pooling(not self._is_dense)

    def _build_model(self):
        if not hasattr(self, "pointnet_seg"):
            self.pointnet_seg = PointNetSeg(input_nc=self.input_features.shape[-1],
                                            **flatten_dict(self._opt))

    def forward(self, *args, **kwargs):
        x = self.pointnet_seg(self.input_features, self.input.batch)
        self.output = F.log_softmax(x, dim=-1)
        internal_loss = self.get_internal_loss()
        if self.labels is not None:
            self.loss = (
                F.nll_loss(self.output, self.labels, ignore_index=IGNORE_LABEL)
                + (internal_loss if internal_loss.item() != 0 else 0) * 0.001
            )
        return self.output

    def backward(self):
        self.loss.backward()


# ---- torch_points3d/trainer.py (reduced) ------------------------------------------------------
class Dataset:
    num_classes = 4
    feature_dimension = 1

    def train_dataloader(self):
        n = 64
        data = Data(pos=torch.randn(n, 3), x=torch.randn(n, 1),
                    y=torch.randint(0, self.num_classes, (n,)), batch=torch.arange(2).repeat_interleave(n // 2))
        for _ in range(5):
            yield data


class Trainer:
    def __init__(self, cfg):
        self._cfg = cfg
        self._initialize_trainer()

    def _initialize_trainer(self):
        self._dataset = Dataset()
        self._model = PointNet(self._cfg["model"], "pointnet", self._dataset)
        self._model.instantiate_optimizers(self._cfg["training"])

    def train(self):
        for data in self._dataset.train_dataloader():
            self._model.set_input(data, "cpu")
            self._model.optimize_parameters(0, 2)
            print("loss", round(self._model.loss.item(), 4))


def main():
    cfg = {"model": {"conv_type": "PARTIAL_DENSE",
                     "pointnet": {"local_nn": 32, "global_nn": 64, "seg_nn": Dataset.num_classes}},
           "training": {"lr": 0.01}}
    trainer = Trainer(cfg)
    trainer.train()


if __name__ == "__main__":
    main()
