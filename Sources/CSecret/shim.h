#ifndef LATCHKEY_CSECRET_SHIM_H
#define LATCHKEY_CSECRET_SHIM_H
/* libsecret (Debian libsecret-1-dev): the Secret Service API of the login keyring.
   Imported only by CredentialStore (KeyringSeal), which keeps a store's wrapping key there. */
#include <libsecret/secret.h>
#endif
