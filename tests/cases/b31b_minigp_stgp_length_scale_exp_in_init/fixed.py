"""Mini-GP issue #13 (https://github.com/IceLab-X/MiniGP/issues/13): the spatio-temporal GP demo (stgp_demo.py,
PM2.5 over lat/long, elevation and time) raised "RuntimeError: Trying to backward through the graph a second time".
The reporter pointed at line 15, SE_kernel.__init__:
    self.length_scale = torch.exp(nn.Parameter(torch.log(torch.tensor(length_scale))))
The nn.Parameter is never registered (only the exp of it is stored, a plain tensor with history), so the length
scales are in no optimizer and never learn; the exp node is built once in __init__, the first backward frees its
saved result, and the second epoch's backward runs through it again. Fix (the reporter's, confirmed by the
maintainer): keep the log length scale as an nn.Parameter and take exp in forward. The script raises."""
import torch
import torch.nn as nn

torch.manual_seed(0)
JITTER = 1e-1


def kronecker(A, B):
    AB = torch.einsum("ab,cd->acbd", A, B)
    return AB.reshape(A.size(0) * B.size(0), A.size(1) * B.size(1))


class SE_kernel(nn.Module):
    def __init__(self, length_scale=1.0):
        super().__init__()
        self.log_length_scale = nn.Parameter(torch.log(torch.tensor(length_scale)))

    def forward(self, X, X2):
        length_scale = torch.exp(self.log_length_scale)
        X = X / length_scale.expand(X.size(0), X.size(1))
        X2 = X2 / length_scale.expand(X2.size(0), X2.size(1))
        X_norm2 = torch.sum(X * X, dim=1).view(-1, 1)
        X2_norm2 = torch.sum(X2 * X2, dim=1).view(-1, 1)
        K = -2.0 * X @ X2.t() + X_norm2 + X2_norm2.t()
        return torch.exp(-K)


class stgp(nn.Module):
    def __init__(self, latlong_length_scale=4.3, elevation_length_scale=3.0, time_length_scale=0.25,
                 noise_variance=0.1, signal_variance=1.0):
        super().__init__()
        self.log_noise_variance = nn.Parameter(torch.log(torch.tensor(noise_variance)))
        self.log_signal_variance = nn.Parameter(torch.log(torch.tensor(signal_variance)))
        self.latlong_kernel = SE_kernel(latlong_length_scale)
        self.elevation_kernel = SE_kernel(elevation_length_scale)
        self.temporal_kernel = SE_kernel(time_length_scale)

    def negative_log_likelihood(self, space_coordinates, time_coordinates, stData):
        latlong_K = self.latlong_kernel(space_coordinates[:, 0:2], space_coordinates[:, 0:2])
        elevation_K = self.elevation_kernel(space_coordinates[:, 2:3], space_coordinates[:, 2:3])
        spatial_K = latlong_K * elevation_K + torch.eye(latlong_K.size(0)) * JITTER
        temporal_K = self.temporal_kernel(time_coordinates, time_coordinates) + torch.eye(time_coordinates.size(0)) * JITTER
        eigen_value_s, eigen_vector_s = torch.linalg.eigh(spatial_K)
        eigen_value_t, eigen_vector_t = torch.linalg.eigh(temporal_K)
        eigen_vector_st = kronecker(eigen_vector_t, eigen_vector_s)
        eigen_value_st = kronecker(eigen_value_t.view(-1, 1), eigen_value_s.view(-1, 1)).view(-1)
        inv = 1.0 / (eigen_value_st + torch.exp(self.log_noise_variance))
        sigma_inverse = eigen_vector_st @ inv.diag_embed() @ eigen_vector_st.transpose(-2, -1)
        alpha = sigma_inverse @ stData.transpose(-2, -1).reshape(-1, 1)
        nll = 0.5 * (eigen_value_st + torch.exp(self.log_noise_variance)).log().sum()
        nll = nll + 0.5 * (stData.transpose(-2, -1).reshape(1, -1) @ alpha).sum()
        return nll


def train_stgp(model, train_space_coordinates, train_time_coordinates, train_stData, lr=0.1, epochs=5):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for i in range(epochs):
        optimizer.zero_grad()
        loss = model.negative_log_likelihood(train_space_coordinates, train_time_coordinates, train_stData)
        loss.backward()
        optimizer.step()
        print("Epoch: {}, Loss: {:.4f}".format(i, loss.item()))


# stands in for data_v1_09_05_fill.mat: 8 stations (lat, long, elevation), 6 time stamps, PM2.5 readings
space = torch.rand(8, 3, dtype=torch.float64) * torch.tensor([10.0, 10.0, 5.0], dtype=torch.float64)
time = torch.linspace(0, 1, 6, dtype=torch.float64).view(-1, 1)
pm25 = torch.sin(space[:, :1] / 3.0) + torch.cos(3.0 * time.t()) + 0.1 * torch.randn(8, 6, dtype=torch.float64)

model = stgp()
print("registered parameters:", [n for n, _ in model.named_parameters()])
train_stgp(model, space, time, pm25, lr=0.1, epochs=5)
print("temporal length scale:", model.temporal_kernel.log_length_scale.exp().item())
