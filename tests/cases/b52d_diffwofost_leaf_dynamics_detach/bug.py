# [Tasks]: Make two modules of wofost72_pp differentiable  (WUR-AI/diffWOFOST)
# https://github.com/WUR-AI/diffWOFOST/issues/8
# What went wrong: WOFOST_Leaf_Dynamics.integrate() copied the leaf-class state arrays with
#   `.detach().clone()` every day, so the graph from the parameters to yesterday's leaf biomass was
#   cut at each time step. Forward/backward ran without error but the gradients of the outputs w.r.t.
#   the crop parameters were wrong; here the initial crop weight TDWI (calibrated against TWLV in the
#   potential-production run, RFTRA == 1) gets a zero gradient and never moves.
# Fix (maintainer, same thread): drop `.detach()` and keep `.clone()`; "After removing .detach(), the
#   gradients match the numerical check."
import datetime
import torch

DTYPE = torch.float64
torch.manual_seed(0)


class WOFOST_Leaf_Dynamics:
    """Leaf dynamics for the WOFOST crop model (plain-torch rewrite of the pcse SimulationObject)."""

    MAX_DAYS = 12

    class Parameters:
        def __init__(self, parvalues):
            for k, v in parvalues.items():
                setattr(self, k, v)

    class StateVariables:
        def __init__(self, **kw):
            for k, v in kw.items():
                setattr(self, k, v)

    class RateVariables:
        pass

    def initialize(self, day, kiosk, parvalues):
        self.START_DATE = day
        self.kiosk = kiosk
        self.params = self.Parameters(parvalues)
        self.rates = self.RateVariables()
        FL, FR, DVS = kiosk["FL"], kiosk["FR"], kiosk["DVS"]
        params = self.params

        # Initial leaf biomass
        WLV = (params.TDWI * (1 - FR)) * FL
        DWLV = torch.zeros((), dtype=DTYPE)
        TWLV = WLV + DWLV

        # Initialize leaf classes (SLA, age and weight)
        SLA = torch.zeros(self.MAX_DAYS, dtype=DTYPE)
        LVAGE = torch.zeros(self.MAX_DAYS, dtype=DTYPE)
        LV = torch.zeros(self.MAX_DAYS, dtype=DTYPE)
        SLA[0] = params.SLATB(DVS)
        LV[0] = WLV

        LAIEM = LV[0] * SLA[0]
        LAI = LAIEM + kiosk["SAI"] + kiosk["PAI"]
        self.states = self.StateVariables(
            LV=LV, SLA=SLA, LVAGE=LVAGE, LAIEM=LAIEM, LASUM=LAIEM, LAIEXP=LAIEM,
            LAI=LAI, WLV=WLV, DWLV=DWLV, TWLV=TWLV,
        )

    def calc_rates(self, day, drv):
        r, s, p, k = self.rates, self.states, self.params, self.kiosk
        DVS = k["DVS"]
        # Growth rate leaves
        r.GRLV = k["ADMI"] * k["FL"]
        # death of leaves due to water/oxygen stress
        r.DSLV1 = s.WLV * (1.0 - k["RFTRA"]) * p.PERDL
        # death due to self shading cause by high LAI
        LAICR = 3.2 / p.KDIFTB(DVS)
        r.DSLV2 = s.WLV * torch.clamp(0.03 * (s.LAI - LAICR) / LAICR, 0.0, 0.03)
        r.DSLV = torch.maximum(r.DSLV1, r.DSLV2)
        # leaves older than SPAN die (sigmoid instead of `if lvage > SPAN` to keep a gradient)
        sharpness = torch.tensor(1e-16, dtype=DTYPE)
        span_mask = torch.sigmoid((s.LVAGE - p.SPAN - 1e-14) / sharpness)
        r.DALV = torch.sum(span_mask * s.LV)
        r.DRLV = torch.maximum(r.DSLV, r.DALV)
        # physiologic ageing of leaves per time step
        r.FYSAGE = torch.clamp((drv["TEMP"] - p.TBASE) / (35.0 - p.TBASE), min=0.0)
        # specific leaf area of leaves per time step
        r.SLAT = p.SLATB(DVS)
        DTEFF = torch.clamp(drv["TEMP"] - p.TBASE, min=0.0)
        r.GLAIEX = s.LAIEXP * p.RGRLAI * DTEFF

    def integrate(self, day, delt=1.0):
        rates, states = self.rates, self.states

        # --------- leave death ---------
        tLV = states.LV.detach().clone()  # <- detach
        tSLA = states.SLA.detach().clone()
        tLVAGE = states.LVAGE.detach().clone()
        tDRLV = rates.DRLV

        weight_cumsum = tLV.cumsum(dim=-1) - tDRLV
        is_alive = weight_cumsum >= 0
        idx_oldest = torch.argmax(is_alive.type(torch.int), dim=-1, keepdim=True)
        new_biomass = torch.take_along_dim(weight_cumsum, indices=idx_oldest, dim=-1)
        tLV = torch.scatter(tLV, dim=-1, index=idx_oldest, src=new_biomass)
        tLV = torch.where(is_alive, tLV, 0.0)
        tLVAGE = torch.where(is_alive, tLVAGE + rates.FYSAGE, 0.0)
        tSLA = torch.where(is_alive, tSLA, 0.0)

        # --------- leave growth ---------
        idx = int((day - self.START_DATE).days / delt) + 1
        tLV[idx] = rates.GRLV
        tSLA[idx] = rates.SLAT
        tLVAGE[idx] = 0.0

        states.LASUM = torch.sum(tLV * tSLA)
        states.LAI = states.LASUM + self.kiosk["SAI"] + self.kiosk["PAI"]
        states.LAIEXP = states.LAIEXP + rates.GLAIEX
        # Update leaf biomass states
        states.WLV = torch.sum(tLV)
        states.DWLV = states.DWLV + rates.DRLV
        states.TWLV = states.WLV + states.DWLV
        states.LV, states.SLA, states.LVAGE = tLV, tSLA, tLVAGE


def run_leaf_dynamics(parvalues, n_days=8):
    # wofost72_pp: potential production, so no water stress (RFTRA == 1)
    kiosk = {"DVS": 0.3, "FL": 0.6, "FR": 0.3, "SAI": 0.0, "PAI": 0.0, "ADMI": 40.0, "RFTRA": 1.0}
    start = datetime.date(2000, 5, 1)
    model = WOFOST_Leaf_Dynamics()
    model.initialize(start, kiosk, parvalues)
    for d in range(n_days):
        day = start + datetime.timedelta(days=d)
        drv = {"TEMP": torch.tensor(15.0 + d % 3, dtype=DTYPE)}
        model.calc_rates(day, drv)
        model.integrate(day)
    return model.states.TWLV


# TDWI (initial total crop dry weight) is the parameter being calibrated
TDWI = torch.tensor(210.0, dtype=DTYPE, requires_grad=True)
parvalues = {
    "TDWI": TDWI,
    "RGRLAI": torch.tensor(0.0082, dtype=DTYPE),
    "SPAN": torch.tensor(35.0, dtype=DTYPE),
    "TBASE": torch.tensor(3.0, dtype=DTYPE),
    "PERDL": torch.tensor(0.03, dtype=DTYPE),
    "SLATB": lambda dvs: torch.tensor(0.0021, dtype=DTYPE),
    "KDIFTB": lambda dvs: torch.tensor(0.6, dtype=DTYPE),
}
TWLV_observed = torch.tensor(420.0, dtype=DTYPE)

optimizer = torch.optim.Adam([TDWI], lr=1.0)
for it in range(3):
    optimizer.zero_grad()
    TWLV = run_leaf_dynamics(parvalues)
    loss = (TWLV - TWLV_observed) ** 2
    loss.backward()
    print(f"iter {it}: TWLV={TWLV.item():.3f} loss={loss.item():.3f} dloss/dTDWI={TDWI.grad}")
    optimizer.step()
print("TDWI after calibration:", TDWI.item())
