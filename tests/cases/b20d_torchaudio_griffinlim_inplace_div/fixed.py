"""torchaudio (pytorch/audio#729, https://github.com/pytorch/audio/issues/729): "torchaudio.transforms.GriffinLim
does not allow backpropagation". A Linear layer maps a magnitude spectrogram, GriffinLim turns it back into a
waveform, and mse_loss(wav, x).backward() raises "RuntimeError: one of the variables needed for gradient
computation has been modified by an inplace operation: [torch.FloatTensor [1, 257, 101, 2]], which is output 0 of
SubBackward0, is at version 1; expected version 0 instead."
Why: functional.griffinlim normalises its phase estimate with
`angles = angles.div_(complex_norm(angles).add_(1e-16)...)`: torch.norm saved `angles` (the output of the
subtraction) and its own result for backward, and both are then overwritten in place.
Fix (PR #730, "Remove in-place operations from GriffinLim for backprop"): `angles.div(complex_norm(angles).add(1e-16)
...)`. Here torchaudio 0.5's griffinlim is a few lines of stand-in; stft/istft go through view_as_real/complex
because torch.stft no longer returns the real (..., 2) layout the old code used."""
import math

import torch


def istft(stft_matrix, n_fft, hop_length, win_length, window, length=None):
    return torch.istft(torch.view_as_complex(stft_matrix.contiguous()), n_fft, hop_length, win_length, window,
                       length=length)


def complex_norm(complex_tensor, power=1.0):
    """torchaudio.functional.complex_norm (0.5)."""
    if power == 1.0:
        return torch.norm(complex_tensor, 2, -1)
    return torch.norm(complex_tensor, 2, -1).pow(power)


def griffinlim(specgram, window, n_fft, hop_length, win_length, power, normalized, n_iter, momentum, length,
               rand_init):
    """torchaudio.functional.griffinlim (0.5.0)."""
    assert momentum < 1, 'momentum={} > 1 can be unstable'.format(momentum)
    assert momentum >= 0, 'momentum={} < 0'.format(momentum)

    # pack batch
    shape = specgram.size()
    specgram = specgram.reshape([-1] + list(shape[-2:]))

    specgram = specgram.pow(1 / power)

    # randomly initialize the phase
    batch, freq, frames = specgram.size()
    if rand_init:
        angles = 2 * math.pi * torch.rand(batch, freq, frames)
    else:
        angles = torch.zeros(batch, freq, frames)
    angles = torch.stack([angles.cos(), angles.sin()], dim=-1) \
        .to(dtype=specgram.dtype, device=specgram.device)
    specgram = specgram.unsqueeze(-1).expand_as(angles)

    # And initialize the previous iterate to 0
    rebuilt = torch.tensor(0.)

    for _ in range(n_iter):
        # Store the previous iterate
        tprev = rebuilt

        # Invert with our current estimate of the phases
        inverse = istft(specgram * angles,
                        n_fft=n_fft,
                        hop_length=hop_length,
                        win_length=win_length,
                        window=window,
                        length=length).float()

        # Rebuild the spectrogram
        rebuilt = torch.view_as_real(torch.stft(inverse, n_fft, hop_length, win_length, window,
                                                True, 'reflect', False, True, return_complex=True))

        # Update our phase estimates
        angles = rebuilt - tprev.mul_(momentum / (1 + momentum))
        angles = angles.div(complex_norm(angles).add(1e-16).unsqueeze(-1).expand_as(angles))

    # Return the final phase estimates
    waveform = istft(specgram * angles,
                     n_fft=n_fft,
                     hop_length=hop_length,
                     win_length=win_length,
                     window=window,
                     length=length)

    # unpack batch
    waveform = waveform.reshape(shape[:-2] + waveform.shape[-1:])

    return waveform


class GriffinLim(torch.nn.Module):
    """torchaudio.transforms.GriffinLim (0.5.0)."""

    def __init__(self, n_fft=400, n_iter=32, win_length=None, hop_length=None, window_fn=torch.hann_window,
                 power=2., normalized=False, wkwargs=None, momentum=0.99, length=None, rand_init=True):
        super(GriffinLim, self).__init__()
        self.n_fft = n_fft
        self.n_iter = n_iter
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        window = window_fn(self.win_length) if wkwargs is None else window_fn(self.win_length, **wkwargs)
        self.register_buffer('window', window)
        self.normalized = normalized
        self.length = length
        self.power = power
        self.momentum = momentum / (1 + momentum)
        self.rand_init = rand_init

    def forward(self, specgram):
        return griffinlim(specgram, self.window, self.n_fft, self.hop_length, self.win_length, self.power,
                          self.normalized, self.n_iter, self.momentum, self.length, self.rand_init)


torch.manual_seed(0)
x = torch.rand(1, 3200)
spec = torch.view_as_real(torch.stft(x, n_fft=512, hop_length=160, win_length=320, return_complex=True))
mag = spec.pow(2).sum(-1).transpose(1, -1)
model = torch.nn.Linear(257, 257)
resyn = GriffinLim(n_fft=512, hop_length=160, win_length=320, n_iter=4, power=1., rand_init=False)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
before = model.weight.detach().clone()
for step in range(5):
    out = model(mag).transpose(1, -1)
    wav = resyn(out)
    loss = torch.nn.functional.mse_loss(wav, x)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.3f}")
print("weights changed:", not torch.equal(before, model.weight))
