//! Application services between the front ends (HTTP API, command line) and the store: each
//! does one piece of the gateway's work on a transaction the caller owns.

pub mod audit;
pub mod optouts;
pub mod studies;
