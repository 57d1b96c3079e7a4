"""Column functions shared by every stage: gain, DCG, resampling weights, exact sums, slices."""
