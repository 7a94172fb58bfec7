//! The catalogue: every ready model by name.

use crate::ball1d::Ball1d;
use crate::ball2d_bowl::Ball2dBowl;
use crate::ball2d_flat::Ball2dFlat;
use crate::cuba_lif::CubaLif;
use crate::impact_pendulum::ImpactPendulum;
use crate::lif::Lif;
use crate::lif_network::LifNetwork;
use crate::model::Model;
use crate::particle_chain::ParticleChain;
use crate::rimless_wheel::RimlessWheel;
use crate::size::Size;
use crate::slip_hopper::SlipHopper;
use crate::thermostat::Thermostat;
use crate::two_ball::TwoBall;
use ia_core::HybridError;

/// Every ready model, in the order of the table in the crate documentation.
pub fn catalog() -> Vec<Box<dyn Model>> {
    vec![
        Box::new(Ball1d),
        Box::new(Ball2dFlat),
        Box::new(Ball2dBowl),
        Box::new(TwoBall),
        Box::new(Lif),
        Box::new(LifNetwork::default()),
        Box::new(Thermostat),
        Box::new(ImpactPendulum),
        Box::new(RimlessWheel),
        Box::new(SlipHopper),
        Box::new(ParticleChain::default()),
        Box::new(CubaLif::default()),
    ]
}

/// The catalogue names of every ready model, in [`catalog`] order.
pub fn model_names() -> Vec<&'static str> {
    catalog().iter().map(|m| m.name()).collect()
}

/// The model named `name`, or [`HybridError::UnknownName`] (kind `"model"`)
/// listing the valid names.
///
/// ```
/// let err = ia_models::by_name("nope").unwrap_err();
/// assert!(err.to_string().contains("ball2d-flat"));
/// ```
pub fn by_name(name: &str) -> Result<Box<dyn Model>, HybridError> {
    let mut models = catalog();
    match models.iter().position(|m| m.name() == name) {
        Some(i) => Ok(models.swap_remove(i)),
        None => Err(HybridError::UnknownName {
            kind: "model".to_string(),
            name: name.to_string(),
            valid: models.iter().map(|m| m.name().to_string()).collect(),
        }),
    }
}

/// The model named `name` with `size` elements, for the sized models:
/// one count for `lif-network` (neurons) and `particle-chain` (balls),
/// three counts `[n_in, n_hidden, n_out]` for `cuba-lif`; `None` gives the
/// default size. A size for a model that has none, or of the wrong form, is
/// an error naming the key `size` and what is valid.
///
/// ```
/// use ia_models::Size;
/// let net = ia_models::sized("lif-network", Some(Size::Count(5))).unwrap();
/// assert_eq!(net.spec().states.len(), 5);
/// let layers = ia_models::sized("cuba-lif", Some(Size::from([5, 10, 3]))).unwrap();
/// assert_eq!(layers.spec().states.len(), 26);
/// assert!(ia_models::sized("ball1d", Some(Size::Count(5))).is_err());
/// assert!(ia_models::sized("lif-network", Some(Size::from([2, 3]))).is_err());
/// ```
pub fn sized(name: &str, size: Option<Size>) -> Result<Box<dyn Model>, HybridError> {
    let model = by_name(name)?;
    let Some(size) = size else {
        return Ok(model);
    };
    match (name, &size) {
        ("lif-network", &Size::Count(n)) => Ok(Box::new(LifNetwork::new(n)?)),
        ("particle-chain", &Size::Count(n)) => Ok(Box::new(ParticleChain::new(n)?)),
        ("lif-network" | "particle-chain", Size::Counts(_)) => Err(HybridError::invalid(
            "size",
            &size,
            format!("model '{name}' takes one count, like 3"),
        )),
        ("cuba-lif", _) => Ok(Box::new(CubaLif::from_size(&size)?)),
        _ => Err(HybridError::invalid(
            "size",
            &size,
            format!(
                "model '{name}' has no size; sized models: {}",
                SIZED_MODELS.join(", ")
            ),
        )),
    }
}

/// The models that take a size.
pub const SIZED_MODELS: &[&str] = &["lif-network", "particle-chain", "cuba-lif"];
