//! Behaviour of the expanders, one test per upstream rule.

mod chain;
mod common;
mod filters;
mod price;
mod priority;
