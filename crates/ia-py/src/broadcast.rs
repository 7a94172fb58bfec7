//! The batch axes of the tangent-linear custom call (`crate::ffi`), which
//! broadcast: under `jax.vmap` with `vmap_method="expand_dims"` an
//! argument not mapped has axes of size 1, so that `jax.jacfwd` (the
//! tangents mapped, the point not) reaches the library as one point with
//! every tangent column.

/// The batch axes of the leads broadcast together (`jax.vmap` with
/// `vmap_method="expand_dims"`: an argument not mapped has axes of size 1),
/// and for each entry of that batch, row-major, the row of each buffer.
pub(crate) fn broadcast_items<const K: usize>(
    leads: [&[i64]; K],
) -> Result<(Vec<i64>, Vec<[usize; K]>), String> {
    let rank = leads[0].len();
    if leads.iter().any(|l| l.len() != rank) {
        return Err(format!(
            "impact_adjoint.jax: the batch axes of the tangent call's arguments differ in number: {leads:?}"
        ));
    }
    let mut shape = vec![1_i64; rank];
    for lead in leads {
        for (size, &d) in shape.iter_mut().zip(lead) {
            if d != 1 && *size != 1 && d != *size {
                return Err(format!(
                    "impact_adjoint.jax: the batch axes of the tangent call's arguments do not broadcast: {leads:?}"
                ));
            }
            if d != 1 {
                *size = d;
            }
        }
    }
    let total: usize = shape
        .iter()
        .map(|&d| usize::try_from(d).unwrap_or(0))
        .product();
    let mut items = Vec::with_capacity(total);
    let mut index = vec![0_i64; rank];
    for _ in 0..total {
        let mut rows = [0_usize; K];
        for (row, lead) in rows.iter_mut().zip(leads) {
            *row = lead.iter().zip(&index).fold(0, |acc, (&d, &i)| {
                acc * d as usize + if d == 1 { 0 } else { i as usize }
            });
        }
        items.push(rows);
        for axis in (0..rank).rev() {
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    Ok((shape, items))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tangent call's batch axes: a point not mapped (axes of 1) against
    /// mapped tangents is one point for every entry (`jax.jacfwd`); mapped
    /// points with tangents not mapped take the same tangent row; axes that
    /// do not broadcast are an error. Reference: NumPy's broadcasting rules.
    #[test]
    fn tangent_batches_broadcast() {
        let (shape, items) = broadcast_items([&[1_i64][..], &[1], &[3], &[3]]).unwrap();
        assert_eq!(shape, vec![3]);
        assert_eq!(items, vec![[0, 0, 0, 0], [0, 0, 1, 1], [0, 0, 2, 2]]);
        let (shape, items) = broadcast_items([&[2_i64, 1][..], &[1, 1], &[1, 2], &[2, 2]]).unwrap();
        assert_eq!(shape, vec![2, 2]);
        assert_eq!(
            items,
            vec![[0, 0, 0, 0], [0, 0, 1, 1], [1, 0, 0, 2], [1, 0, 1, 3]]
        );
        let (shape, items) = broadcast_items([&[][..], &[], &[], &[]]).unwrap();
        assert!(shape.is_empty() && items == vec![[0, 0, 0, 0]]);
        let Err(failure) = broadcast_items([&[2_i64][..], &[3], &[1], &[1]]) else {
            panic!("2 and 3 do not broadcast")
        };
        assert!(failure.contains("do not broadcast"), "{failure}");
    }
}
