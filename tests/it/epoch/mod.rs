//! Epochs: advance, the contract generations, leftovers, the whole lifecycle.

mod advance;
mod generations;
mod leftovers;
mod lifecycle;
mod results;
mod titles;
