package kcompatd

// Encrypted PKCS#8 private keys (RFC 5958 EncryptedPrivateKeyInfo), which
// Kafka reads from a PEM key store with ssl.key.password and Go's x509
// package does not: the PBES2 scheme of RFC 8018 (what OpenSSL writes by
// default since 1.1: PBKDF2 with HMAC-SHA1/SHA-224/SHA-256/SHA-384/SHA-512,
// then AES-128/192/256-CBC or DES-EDE3-CBC). The older PBES1 schemes (MD5
// or SHA-1 with DES or RC2) are refused: they are broken, and OpenSSL no
// longer writes them.

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
)

var (
	oidPBES2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2    = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1  = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA2s = map[string]func() hash.Hash{
		"1.2.840.113549.2.8":  sha256.New224,
		"1.2.840.113549.2.9":  sha256.New,
		"1.2.840.113549.2.10": sha512.New384,
		"1.2.840.113549.2.11": sha512.New,
	}
	// the CBC ciphers: key length and constructor
	pbes2Ciphers = map[string]struct {
		keyLen int
		block  func([]byte) (cipher.Block, error)
	}{
		"2.16.840.1.101.3.4.1.2":  {16, aes.NewCipher},
		"2.16.840.1.101.3.4.1.22": {24, aes.NewCipher},
		"2.16.840.1.101.3.4.1.42": {32, aes.NewCipher},
		"1.2.840.113549.3.7":      {24, des.NewTripleDESCipher},
	}
)

// errPKCS8 is an encrypted key kcompatd cannot read, or a wrong password.
var errPKCS8 = errors.New("kcompatd: encrypted private key")

type algorithmIdentifier struct {
	Algorithm  asn1.ObjectIdentifier
	Parameters asn1.RawValue `asn1:"optional"`
}

type encryptedPrivateKeyInfo struct {
	Algorithm     algorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc algorithmIdentifier
	EncryptionScheme  algorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                 `asn1:"optional"`
	PRF            algorithmIdentifier `asn1:"optional"`
}

// maxPBKDF2Iterations bounds the work a key file can ask for (OpenSSL
// writes 2048; OWASP advises 600000 for PBKDF2-HMAC-SHA256).
const maxPBKDF2Iterations = 1_000_000

// decryptPKCS8 returns the PKCS#8 PrivateKeyInfo inside an
// EncryptedPrivateKeyInfo. It never panics on any input (FuzzDecryptPKCS8).
func decryptPKCS8(der, password []byte) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) > 0 {
		return nil, fmt.Errorf("%w: not an EncryptedPrivateKeyInfo", errPKCS8)
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("%w: scheme %s is not supported (PBES2 only: openssl pkcs8 -topk8 -v2 aes256)", errPKCS8, info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("%w: PBES2 parameters: %v", errPKCS8, err)
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("%w: key derivation %s is not supported (PBKDF2 only)", errPKCS8, params.KeyDerivationFunc.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("%w: PBKDF2 parameters: %v", errPKCS8, err)
	}
	if kdf.IterationCount < 1 || kdf.IterationCount > maxPBKDF2Iterations {
		return nil, fmt.Errorf("%w: PBKDF2 iteration count %d out of range", errPKCS8, kdf.IterationCount)
	}
	prf := sha1.New
	if len(kdf.PRF.Algorithm) > 0 && !kdf.PRF.Algorithm.Equal(oidHMACSHA1) {
		h, ok := oidHMACSHA2s[kdf.PRF.Algorithm.String()]
		if !ok {
			return nil, fmt.Errorf("%w: PBKDF2 PRF %s is not supported", errPKCS8, kdf.PRF.Algorithm)
		}
		prf = h
	}
	ciph, ok := pbes2Ciphers[params.EncryptionScheme.Algorithm.String()]
	if !ok {
		return nil, fmt.Errorf("%w: cipher %s is not supported", errPKCS8, params.EncryptionScheme.Algorithm)
	}
	if kdf.KeyLength != 0 && kdf.KeyLength != ciph.keyLen {
		return nil, fmt.Errorf("%w: key length %d does not fit the cipher", errPKCS8, kdf.KeyLength)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil {
		return nil, fmt.Errorf("%w: cipher IV: %v", errPKCS8, err)
	}
	key, err := pbkdf2.Key(prf, string(password), kdf.Salt, kdf.IterationCount, ciph.keyLen)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errPKCS8, err)
	}
	block, err := ciph.block(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errPKCS8, err)
	}
	data := info.EncryptedData
	if len(iv) != block.BlockSize() || len(data) == 0 || len(data)%block.BlockSize() != 0 {
		return nil, fmt.Errorf("%w: malformed ciphertext", errPKCS8)
	}
	out := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, data)
	// PKCS#7 padding; a wrong password shows up here (or in the parse).
	pad := int(out[len(out)-1])
	if pad == 0 || pad > block.BlockSize() {
		return nil, fmt.Errorf("%w: wrong ssl.key.password, or a damaged key", errPKCS8)
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, fmt.Errorf("%w: wrong ssl.key.password, or a damaged key", errPKCS8)
		}
	}
	return out[:len(out)-pad], nil
}
