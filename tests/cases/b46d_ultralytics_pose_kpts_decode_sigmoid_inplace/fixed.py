# Shape of ultralytics/ultralytics#25654 (fixed by PR #25694): `yolo track pose ... visualize=True`
# draws class activation maps, which differentiate a detection score with respect to the
# neck's feature maps through the inference graph. The Pose head's kpts_decode() clones the
# raw keypoints, applies sigmoid_() in place to the visibility slice, then writes the x and y
# slices of the same tensor; autograd then refuses the gradient for the CAM.
import torch
import torch.nn as nn

torch.manual_seed(0)


class Pose(nn.Module):
    """Minimal stand-in for ultralytics.nn.modules.head.Pose (one detection level)."""

    def __init__(self, nc=1, kpt_shape=(4, 3), ch=8, stride=8.0):
        super().__init__()
        self.nc, self.kpt_shape = nc, kpt_shape
        self.nk = kpt_shape[0] * kpt_shape[1]
        self.export = False
        self.cv2 = nn.Conv2d(ch, 4, 1)         # boxes
        self.cv3 = nn.Conv2d(ch, nc, 1)        # class scores
        self.cv4 = nn.Conv2d(ch, self.nk, 1)   # keypoints
        self.stride = stride

    def make_anchors(self, h, w):
        ys, xs = torch.meshgrid(torch.arange(h) + 0.5, torch.arange(w) + 0.5, indexing="ij")
        self.anchors = torch.stack((xs.flatten(), ys.flatten()))  # (2, na)
        self.strides = torch.full((1, h * w), self.stride)

    def kpts_decode(self, kpts):
        ndim = self.kpt_shape[1]
        y = kpts.clone()
        if ndim == 3:
            y[:, 2::ndim] = y[:, 2::ndim].sigmoid()
        y[:, 0::ndim] = (y[:, 0::ndim] * 2.0 + (self.anchors[0] - 0.5)) * self.strides
        y[:, 1::ndim] = (y[:, 1::ndim] * 2.0 + (self.anchors[1] - 0.5)) * self.strides
        return y

    def forward(self, x):
        bs, _, h, w = x.shape
        self.make_anchors(h, w)
        box = self.cv2(x).view(bs, 4, -1)
        cls = self.cv3(x).view(bs, self.nc, -1).sigmoid()
        kpt = self.cv4(x).view(bs, self.nk, -1)
        return torch.cat([box, cls, self.kpts_decode(kpt)], 1)  # (bs, 4 + nc + nk, na)


class TinyPoseModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.SiLU(), nn.Conv2d(8, 8, 3, 2, 1), nn.SiLU())
        self.neck = nn.Sequential(nn.Conv2d(8, 8, 3, 2, 1), nn.SiLU())
        self.head = Pose()

    def forward(self, im):
        return self.head(self.neck(self.backbone(im)))


def class_activation_map(model, im):
    """Gradient-weighted activation map of the neck output for the best detection score."""
    feats = {}
    handle = model.neck.register_forward_hook(lambda m, i, o: feats.setdefault("neck", o))
    preds = model(im)
    handle.remove()
    score = preds[:, 4 : 4 + model.head.nc].amax()
    (grad,) = torch.autograd.grad(score, [feats["neck"]], allow_unused=True)
    print("grad of score wrt neck features, norm", round(grad.norm().item(), 6))
    weights = grad.mean(dim=(2, 3), keepdim=True)
    return torch.relu((weights * feats["neck"]).sum(1)).detach()


model = TinyPoseModel().eval()
frame = torch.rand(1, 3, 64, 64)  # one frame of the tracked video, visualize=True
cam = class_activation_map(model, frame)
print("CAM", tuple(cam.shape))
