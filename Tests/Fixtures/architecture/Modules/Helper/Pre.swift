// Fixture for check-architecture rule 3: an attribute before `import` does not hide a C library's import. Not compiled.
@preconcurrency import CZstd
