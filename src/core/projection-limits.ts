/** The reference's bounds on one projection. */
export const MAX_PROJECTION_SUBJECTS = 128;
export const MAX_PROJECTION_HISTORY = 256;
export const MAX_PROJECTION_REJECTIONS = 64;
export const MAX_PROJECTION_OBSERVATIONS = 1024;
export const MAX_CONFLICT_FINGERPRINTS = 16;
