//! Read and write delegations: grant policy, recall, revocation.
