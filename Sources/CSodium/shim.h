#ifndef KEYVAULT_CSODIUM_SHIM_H
#define KEYVAULT_CSODIUM_SHIM_H
// libsodium, seen by KeyVaultCrypto alone (internal import). Everything is a plain
// call or an integer macro, so no inline helpers are needed here.
#include <sodium.h>
#endif
