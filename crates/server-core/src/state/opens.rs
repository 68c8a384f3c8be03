//! Open-owners, opens and share reservations.
