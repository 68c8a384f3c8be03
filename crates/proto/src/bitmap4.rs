//! NFSv4 attribute bitmaps (`bitmap4`, RFC 8881 section 3.3.7): word `i`
//! bit `b` stands for attribute `32 * i + b`. Shared by the server, which
//! reads what a client asks for, and the client, which says what it wants.

/// Whether attribute `n` is set in `mask`.
pub fn has(mask: &[u32], n: u32) -> bool {
    mask.get((n / 32) as usize).is_some_and(|w| w & (1 << (n % 32)) != 0)
}

/// Sets attribute `n` in `mask`, growing it as needed.
pub fn add(mask: &mut Vec<u32>, n: u32) {
    let i = (n / 32) as usize;
    if mask.len() <= i {
        mask.resize(i + 1, 0);
    }
    mask[i] |= 1 << (n % 32);
}

/// A mask with `attrs` set.
pub fn of(attrs: &[u32]) -> Vec<u32> {
    let mut mask = Vec::new();
    for &n in attrs {
        add(&mut mask, n);
    }
    mask
}

/// The attribute numbers set in `mask`, lowest first (the order of their
/// values in a `fattr4`).
pub fn bits(mask: &[u32]) -> impl Iterator<Item = u32> + '_ {
    mask.iter()
        .enumerate()
        .flat_map(|(i, w)| (0..32u32).filter(move |b| w & (1 << b) != 0).map(move |b| i as u32 * 32 + b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_round_trip_across_words() {
        let m = of(&[1, 20, 33, 53]);
        assert_eq!(m.len(), 2);
        assert!(has(&m, 33) && !has(&m, 34) && !has(&m, 200));
        assert_eq!(bits(&m).collect::<Vec<_>>(), vec![1, 20, 33, 53]);
    }
}
