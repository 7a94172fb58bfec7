//! # ia-fit: fitting parameters of a hybrid system to data (in progress)
