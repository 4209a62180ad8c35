"""Ultralytics YOLOv8 (ultralytics/ultralytics#10071, https://github.com/ultralytics/ultralytics/issues/10071):
"element 0 of tensors does not require grad and does not have a grad_fn". The user computes a confidence loss
of a picture with `results = model(img_tensor)` / `results.boxes.conf` and calls adv_loss.backward() to update
the image; backward raises, and `print(confs.requires_grad)` shows False.
Why: YOLO.__call__ -> predict -> BasePredictor.stream_inference, which ultralytics decorates with
@smart_inference_mode() (torch.inference_mode). The whole forward pass and the NMS post-processing run with
autograd off, so results.boxes.conf carries no history back to the image (see also ultralytics#6211, where
removing that decorator made conf differentiable).
Fix: run the underlying torch model outside the predictor (model.model(img_tensor)) and post-process its raw
predictions, so the confidences stay connected to the image."""
import torch
from torch import nn

torch.manual_seed(0)
device = "cpu"


# ---- Ultralytics stand-in: ultralytics/engine/model.py, engine/predictor.py, engine/results.py --------
def smart_inference_mode():
    """ultralytics.utils.torch_utils.smart_inference_mode: inference_mode for torch>=1.9."""
    return torch.inference_mode()


class DetectionModel(nn.Module):
    """nn.Module behind YOLO: returns raw predictions (batch, 4 + nc, anchors)."""

    def __init__(self, nc=3):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.SiLU(), nn.Conv2d(8, 16, 3, 2, 1), nn.SiLU())
        self.head = nn.Conv2d(16, 4 + nc, 1)

    def forward(self, x):
        p = self.head(self.backbone(x))
        return torch.cat([p[:, :4], p[:, 4:].sigmoid()], 1).flatten(2)


class Boxes:
    def __init__(self, data):
        self.data = data

    @property
    def conf(self):
        return self.data[:, 4]


class Results:
    def __init__(self, boxes):
        self.boxes = Boxes(boxes)


class DetectionPredictor:
    def __init__(self, model, conf=0.25):
        self.model, self.conf = model, conf

    def postprocess(self, preds, img, orig_imgs):
        """ops.non_max_suppression in short: keep anchors whose best class score passes conf."""
        results = []
        for pred in preds:
            pred = pred.T  # (anchors, 4 + nc)
            score, cls = pred[:, 4:].max(1)
            keep = score > self.conf
            results.append(Results(torch.cat([pred[keep, :4], score[keep, None], cls[keep, None].float()], 1)))
        return results

    @smart_inference_mode()
    def stream_inference(self, source=None, *args, **kwargs):
        im = source
        preds = self.model(im)
        self.results = self.postprocess(preds, im, im)
        yield from self.results

    def __call__(self, source=None, stream=False, *args, **kwargs):
        return list(self.stream_inference(source, *args, **kwargs))


class YOLO(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = DetectionModel()
        self.predictor = DetectionPredictor(self.model)

    def __call__(self, source=None, stream=False, **kwargs):
        return self.predict(source, stream, **kwargs)

    def predict(self, source=None, stream=False, **kwargs):
        return self.predictor(source=source, stream=stream)
# ---------------------------------------------------------------------------------------------------------


model = YOLO().eval()
for p in model.parameters():  # a loaded yolov8n.pt comes with requires_grad=False (ultralytics#14907)
    p.requires_grad_(False)


def predict_images_tensor(img_tensor):
    if img_tensor.ndim == 3:
        img_tensor = img_tensor.unsqueeze(0)
    img_tensor = img_tensor.to(device)
    results = model.predictor.postprocess(model.model(img_tensor), img_tensor, img_tensor)
    if isinstance(results, list):
        results = results[0]
    confs = results.boxes.conf
    conf_loss = torch.sum(confs).to(device)
    return conf_loss


image = torch.rand(3, 32, 32)
perturbation = torch.zeros(3, 32, 32, requires_grad=True)  # the adversarial change to the image
optimizer = torch.optim.Adam([perturbation], lr=0.01)
for step in range(5):
    adv_loss = predict_images_tensor((image + perturbation).clamp(0, 1))
    print(f"step {step} conf loss {adv_loss.item():.4f} requires_grad {adv_loss.requires_grad}")
    optimizer.zero_grad()
    adv_loss.backward()
    optimizer.step()
print("perturbation changed:", bool(perturbation.detach().abs().sum() > 0))
