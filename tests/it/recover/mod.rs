//! `harnery recover`: recovery packets and the resume policy.

mod built;
mod cli;
mod corpus;
mod policy;
