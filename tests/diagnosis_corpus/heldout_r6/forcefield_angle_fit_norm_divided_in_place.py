"""Fitting a force field's harmonic angle parameters to reference energies and forces of water
conformers: the library evaluates the angle energy of each conformer, the forces are minus its
gradient with respect to the coordinates (autograd.grad with create_graph=True), and the
energy-and-force loss trains the force constant and the equilibrium angle.

Rewritten from openforcefield/smee#9 ("Remove the use of in-place operations", merged): "This PR
removes instances of 'in-place' operations which `pytorch` cannot backpropagate through." In
smirnoffee/potentials/valence.py the angle energy normalised its bond vectors in place
(`vector_ab /= torch.norm(vector_ab, dim=1).unsqueeze(1)`); the fix divides out of place. The norm
saved the bond vector for its backward, so differentiating the energy with respect to the coordinates
meets a bond vector the library has already overwritten.
"""
import torch
import torch.nn.functional as F

SOURCE = "openforcefield/smee#9"
CATEGORY = "inplace"
CULPRIT = None
CAUSE = "the library normalises the bond vectors in place after norm saved them"
FIX_KIND = "out-of-place"
ERROR = "inplace"
INTENT = ("The energy and force matching loss trains the angle parameters (force constant and "
          "equilibrium angle); the conformer coordinates are data.")
GRADS = "parameters"


def evaluate_harmonic_angle_energy(conformer, atom_indices, parameters):   # the library's valence term
    vector_ab = conformer[:, atom_indices[:, 1]] - conformer[:, atom_indices[:, 0]]
    vector_ab /= torch.norm(vector_ab, dim=-1).unsqueeze(-1)  # BUG
    # FIX: vector_ab = vector_ab / torch.norm(vector_ab, dim=-1).unsqueeze(-1)
    vector_ac = conformer[:, atom_indices[:, 1]] - conformer[:, atom_indices[:, 2]]
    vector_ac /= torch.norm(vector_ac, dim=-1).unsqueeze(-1)  # BUG
    # FIX: vector_ac = vector_ac / torch.norm(vector_ac, dim=-1).unsqueeze(-1)
    angles = torch.rad2deg(torch.acos((vector_ab * vector_ac).sum(dim=-1)))
    return (0.5 * parameters[:, 0] * (angles - parameters[:, 1]) ** 2).sum(-1)


torch.manual_seed(0)
water = torch.tensor([[0.0, 0.0, 0.0], [0.96, 0.0, 0.0], [-0.24, 0.93, 0.0]])
conformers = (water + 0.05 * torch.randn(6, 3, 3)).requires_grad_()
atom_indices = torch.tensor([[1, 0, 2]])               # the H-O-H angle
parameters = torch.tensor([[0.02, 100.0]], requires_grad=True)
ref_energy, ref_forces = 0.1 * torch.rand(6), 0.01 * torch.randn(6, 3, 3)   # reference QM data
optimizer = torch.optim.Adam([parameters], lr=1e-2)
for step in range(2):
    energy = evaluate_harmonic_angle_energy(conformers, atom_indices, parameters)
    forces = -torch.autograd.grad(energy.sum(), conformers, create_graph=True)[0]
    loss = F.mse_loss(energy, ref_energy) + F.mse_loss(forces, ref_forces)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
