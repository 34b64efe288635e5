// Tests of cpp/include/cuckoo/hash.hpp: XXH64 against published test vectors, every code path of
// XXH64 (lengths 0..100), hash_u64 == XXH64 of the 8 little-endian bytes, byte-order helpers,
// mix64 and reduce32.
//
// Where the expected values come from:
//  - kSanity: the XXH64 table of the reference implementation's self-test (xxHash,
//    cli/xsum_sanity_check.c), over its generated buffer (fill_sanity_buffer below).
//  - kStrings: commonly published XXH64 values of short strings (xxHash documentation and
//    other implementations' test suites).
//  - kLen0to100*: XXH64 of the first 0..100 bytes of the sanity buffer, computed with the
//    `xxhash` Python package 4.1.0 (the reference C library) during development:
//      xxhash.xxh64_intdigest(buf[:n], seed) for n in range(101)
//    Lengths 0..100 reach every branch of XXH64: the < 32-byte path and the 32-byte-stripe path,
//    each followed by every combination of 8-byte words, a 4-byte word and 0..3 single bytes.
//  - kXxh3Vectors: XXH3-64 of prefixes of the same buffer, computed the same way; the lengths
//    reach every path of XXH3 (0, 1-3, 4-8, 9-16, 17-128 with 1-4 pairs of 16-byte halves,
//    129-240, and the long path's partial and whole 1024-byte blocks and last stripe), with the
//    seed 0 (the default secret) and two others (the secret derived from the seed).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "check.hpp"
#include "cuckoo/hash.hpp"
#include "cuckoo/hash_block.hpp"

using cuckoo::hash_bytes;
using cuckoo::hash_u64;
using cuckoo::xxh64;

namespace {

constexpr uint64_t PRIME32 = 2654435761u;
constexpr uint64_t PRIME64 = 11400714785074694797ull;

// The reference self-test's buffer: byte i = top byte of PRIME32 * PRIME64^i.
std::vector<unsigned char> fill_sanity_buffer(size_t len) {
    std::vector<unsigned char> buf(len);
    uint64_t gen = PRIME32;
    for (size_t i = 0; i < len; ++i) {
        buf[i] = static_cast<unsigned char>(gen >> 56);
        gen *= PRIME64;
    }
    return buf;
}

struct Vector {
    size_t len;
    uint64_t seed;
    uint64_t expected;
};

const Vector kSanity[] = {
    {0, 0, 0xEF46DB3751D8E999ull},   {0, PRIME32, 0xAC75FDA2929B17EFull},
    {1, 0, 0xE934A84ADB052768ull},   {1, PRIME32, 0x5014607643A9B4C3ull},
    {4, 0, 0x9136A0DCA57457EEull},   {14, 0, 0x8282DCC4994E35C8ull},
    {14, PRIME32, 0xC3BD6BF63DEB6DF0ull}, {222, 0, 0xB641AE8CB691C174ull},
    {222, PRIME32, 0x20CB8AB7AE10C14Aull},
};

struct StringVector {
    const char* text;
    uint64_t seed;
    uint64_t expected;
};

const StringVector kStrings[] = {
    {"", 0, 0xEF46DB3751D8E999ull},
    {"a", 0, 0xD24EC4F1A98C6E5Bull},
    {"abc", 0, 0x44BC2CF5AD770999ull},
    {"ABC", 0, 0xE66AE7354FCFEE98ull},
    {"xxhash", 0, 0x32DD38952C4BC720ull},
    {"The quick brown fox jumps over the lazy dog", 0, 0x0B242D361FDA71BCull},
    {"", 668718853, 0x04E830582A31A119ull},
    {"a", 191961062, 0x6E05BA2887C97977ull},
    {"abcdefghijklmnopqrstuvwxyz12345", 0, 0x467605901B01D6F6ull},
    {"abcdefghijklmnopqrstuvwxyz12345", 877380273, 0x37B562EC5715E132ull},
};

// Published XXH64 (seed 0) of 8-byte little-endian integers.
struct U64Vector {
    uint64_t value;
    uint64_t expected;
};
const U64Vector kU64[] = {
    {0, 0x34C96ACDCADB1BBBull},
    {0xC20369A413E28FC1ull, 0xE887D97F3EFE7B44ull},
    {0xC722205F1C53D89Full, 0x68BEC6640212567Dull},
    {0x146AEAC22CD734F6ull, 0xECFBB0C2A1E3E878ull},
    {0x33AF2950D2E525ECull, 0x03760006CA050043ull},
    {0x50745822FA9B4673ull, 0x199F8B0904FA343Aull},
};

const uint64_t kLen0to100Seed0[101] = {
    0xEF46DB3751D8E999ULL, 0xE934A84ADB052768ULL, 0x5D48CD60A77E23FFULL, 0xFF7E1959CB50794AULL,
    0x9136A0DCA57457EEULL, 0x9B046FB1397F09A5ULL, 0xC72565B7154268A8ULL, 0x6C83909A9F01ED25ULL,
    0xCDBCF538E71D1348ULL, 0x554B1AE991EDA6B6ULL, 0x5D00E7351392EA84ULL, 0x6345D5746F35DA70ULL,
    0x0723BF50086EAD9AULL, 0xC2E5013E3C40BCF7ULL, 0x8282DCC4994E35C8ULL, 0x180719316D622D84ULL,
    0x98C90B57FDFCB55CULL, 0x0D39A2D051A30C2CULL, 0x33E84A4333B2B2EBULL, 0xE91C6EF31FC08F82ULL,
    0x5F8C68355769439EULL, 0x42B0B8EE353AC461ULL, 0x65C935C6978098B1ULL, 0xD2460ECC840B74DDULL,
    0xF75A6DEA42DC5BF4ULL, 0x52FAA43C3F20B994ULL, 0x8DB7831EC345F9A3ULL, 0x88945AA08051FC2DULL,
    0x64CD9E8C96A9E2DDULL, 0x8C8F345B634AC2B9ULL, 0xE2677241D4C46CAFULL, 0x299B39A290E6D783ULL,
    0x18B216492BB44B70ULL, 0x55C8DC3E578F5B59ULL, 0xD0CE7CBAE371BEB2ULL, 0xCB0AA8E2A7A29707ULL,
    0x0AE67584084DC6A4ULL, 0x292F5332C92B73CEULL, 0x5F398E2A8478BED3ULL, 0xB888CAF07592B1B3ULL,
    0x23B3810D7D8B1731ULL, 0x5342C966C7F3D5F4ULL, 0x77454B74F1DBBF63ULL, 0x9904C9350F597190ULL,
    0x24EC2B3D0E442641ULL, 0x4EC307EBE0A650A4ULL, 0x7DD1C5514B2240EFULL, 0x84A42E167CBD1FEFULL,
    0xFD0FEEAC7A939933ULL, 0xA91BFF78A7185B66ULL, 0xDFFE9F293DDD101DULL, 0x2332585C18D7483AULL,
    0x5A0056511F9DD653ULL, 0x4426A2F5C8D59469ULL, 0x39EAF8893520636AULL, 0xAFEA98CC4E92F7E1ULL,
    0xB7A6414B8D3E2597ULL, 0xF33D64569CD4B1C0ULL, 0x93FA072F0E8FE7CAULL, 0x4F2890576949D6EDULL,
    0x3378C44F459C290BULL, 0x40D486FDDDAD5CB7ULL, 0x21664C60C551CC87ULL, 0xA9EFBE0FA0F3F4E7ULL,
    0xEF558F8ACAC2B5CDULL, 0xDE0F20DC2631AF7AULL, 0xCF1E52EDE1C505C4ULL, 0x0965DF7219D2E741ULL,
    0x1B8378E923B247A7ULL, 0x43F2B606AD9BA362ULL, 0xD9C3413222F1DEA4ULL, 0x3D6ECAB2BCFBE3FFULL,
    0xEA8573B60D5A8800ULL, 0xE372599E31F8CFFDULL, 0x02B86794A00BDBE8ULL, 0xCA1A21FB24979810ULL,
    0x60DFF17BEC07766DULL, 0xF4AF74828DE6862DULL, 0x828E4C8C5257CC15ULL, 0x91F7F9D6008299A0ULL,
    0x99BD5D25EB211099ULL, 0xCB329A8F102F05BCULL, 0x993A0B6E6D5DF0CBULL, 0x818F4CEC407D8CF9ULL,
    0xAF57F8CD340FB1B6ULL, 0x50789F0F60EBAD3AULL, 0xF3214750C1A6455EULL, 0x8DBE8913BE346D20ULL,
    0xA130814F81F87E43ULL, 0x0023276D258EDA58ULL, 0x0A0571F769B40C93ULL, 0x14A2F5051E8893C8ULL,
    0x4FBBE74E062367B0ULL, 0x4B375CEF503586FCULL, 0x6AD4B96E4286EB70ULL, 0xFF9F46BDCC644624ULL,
    0x105064E743EDD1D9ULL, 0x097B16E4E9B0A2E3ULL, 0x06662519E8393FF2ULL, 0xB51CB5BA2957AB0BULL,
    0x4BFE019CD91D9EA4ULL,
};
const uint64_t kLen0to100SeedPrime32[101] = {
    0xAC75FDA2929B17EFULL, 0x5014607643A9B4C3ULL, 0x9E93152232D54A39ULL, 0xAA8584E83660F7D1ULL,
    0xCAAB286BD8E9FDB5ULL, 0x2AF5249930F984ECULL, 0xCA4C6723580E8EF6ULL, 0xF98D03B1AD6F9293ULL,
    0xFE0C047A5353CDACULL, 0x7908265248F6D73FULL, 0x2A8AE16B86CD2F12ULL, 0xEAA08A8C8BE3CCCFULL,
    0x8252819F4E506951ULL, 0x4DF437A291CB1039ULL, 0xC3BD6BF63DEB6DF0ULL, 0xD61105C20E91F99FULL,
    0xC900AD2D536B607EULL, 0x495CD68A647C7A22ULL, 0x2325A30CCA1A66DDULL, 0x06809662799B7D6FULL,
    0x97218696C2D29602ULL, 0x7FC0BB451B83A633ULL, 0xC4A0DD14BF835C13ULL, 0x4B44E8DE7A396773ULL,
    0x8B7C67EB59778E22ULL, 0xC4FEC92EAC2C3B8AULL, 0x2C2A80BCAD321466ULL, 0x3401AF8EF28FD410ULL,
    0x8160FB8C20B48287ULL, 0x5A327C78E4AD6678ULL, 0xB1B2B51C93AF4866ULL, 0xDA673D5FEB5C1D79ULL,
    0xB3F33BDF93ADE409ULL, 0xE92C292F64BC3071ULL, 0xC509C460280BBB12ULL, 0xECE3515C236504C7ULL,
    0x57C73F9E3A6FC2C6ULL, 0x7762425B2E89DAD3ULL, 0xE842D306DC53E621ULL, 0x602E74D43465AC3DULL,
    0x5A57F246772BC540ULL, 0xB213FFB25FEB1CCDULL, 0xAED0CE7EA4202741ULL, 0xA071200735E57A6AULL,
    0x831B7452E64EB328ULL, 0x66BDA694A1FD3023ULL, 0xD238E617805EA9BBULL, 0xA474B31A5132A541ULL,
    0x6FFE2F43A24C2302ULL, 0xE858B13C918498ECULL, 0x46521A048859CE7AULL, 0x788846B44826A5D1ULL,
    0x1C0081F84C6D32DBULL, 0x4270188315F2CC31ULL, 0xB6D6E8B68C7EF7A2ULL, 0xE6D5C88B9135E579ULL,
    0xB6BD2CBFB6A64017ULL, 0xB9B235447E24CA28ULL, 0xB8D0D6211B80EA15ULL, 0x11E586B470B7224EULL,
    0xA7C18F722446E5C8ULL, 0x980BDE3212E2F025ULL, 0x128AC6F704B8A0F7ULL, 0x6C911FADB05B6FC2ULL,
    0xB5EEBA99264CC44FULL, 0xD3F6FF3941E310CAULL, 0xBCE7B3488A29EFB1ULL, 0x1862E884ABDC704CULL,
    0x25E6F985E36492EFULL, 0x81F00574A346F668ULL, 0xE01652426AA1774CULL, 0xAAB5C313DFAC5A44ULL,
    0xBDEE6BA43947EB30ULL, 0xF1597384DE9FBD93ULL, 0x5FB940B90D39A1E6ULL, 0x76214D8E3B169CF5ULL,
    0x9A8133A1DDAF07DBULL, 0xD73AEC54F785E384ULL, 0xD2317E57923E664CULL, 0xE863995625F7AD52ULL,
    0x5281D5357D0B8AC4ULL, 0x7E77B483A01E4AEDULL, 0x6DBD4234F13A5DC1ULL, 0x0367C5363E62AEC3ULL,
    0xC7623B4C4E6844C1ULL, 0xB88DA3150AAF44BEULL, 0x56C1A7FB96DE0E82ULL, 0x899E381BD46D1409ULL,
    0xA3BF96F3D593C759ULL, 0x6779DE8C67483444ULL, 0x9C915D4DA4BE05A6ULL, 0x46F62B0B3D1B66AFULL,
    0x3190419611427263ULL, 0x821D5495DDDC7C82ULL, 0x553DDDB89F3CB523ULL, 0x72E75A560EF624A3ULL,
    0x8FF0B4ABEE6F03CCULL, 0x9704E5147FDCC4F4ULL, 0xB2889379EAD9C5CFULL, 0x5C10E54DEC4B0FA9ULL,
    0x4853706DC9625CAEULL,
};
const uint64_t kLen0to100SeedAllOnes[101] = {
    0x298F4C84B24F5380ULL, 0x8BA3328805E37C90ULL, 0xB717B1919A269B1EULL, 0xD98FF19E5346B786ULL,
    0x159FBDB3FC3FC1D6ULL, 0xBEB995D7AE545217ULL, 0xAF3B4B8F59105AE4ULL, 0x73BDE04667CA6BF4ULL,
    0x568E81B1596E8283ULL, 0x82763E2471C59DEDULL, 0x218C6C842D098F10ULL, 0x7D997DF67EA39EF0ULL,
    0x3076E05B0AB6ECE0ULL, 0xE6918F231CE546F9ULL, 0x8523C9EE6F9548EDULL, 0xABA497CF6BECE3A5ULL,
    0x2A361A78823233FEULL, 0x29CB6DD1A6236E81ULL, 0xFF625B20F03FDB98ULL, 0xE7F93754D1F15783ULL,
    0xB9BA0123C7CA2AE9ULL, 0x787F2039AACD0E98ULL, 0x4DF0D8EB1E3762C5ULL, 0x5F0615E4624B7B5AULL,
    0xD373A914C9BD3051ULL, 0x65BD3487890A1035ULL, 0x14E8362C92E0F405ULL, 0x52F3F65A873054A8ULL,
    0xC612A9831F4A2971ULL, 0x0AFC5DD93FAE2488ULL, 0xEA9227F1AD3C2B8EULL, 0x6ED1061F61C686E5ULL,
    0x3A793D9020113C2AULL, 0x3E29B6E70F2543DAULL, 0x8821C24C7CD4BDEDULL, 0xB1CD15559E8D9E94ULL,
    0xA042F6AAC0F76EACULL, 0x08F65190ED329D00ULL, 0x5527E1283DDF16B5ULL, 0x90AB239BF57108C9ULL,
    0x5F341658CA9B0367ULL, 0x220ACAEA74214A44ULL, 0x7FF4D3AAE2BD84A5ULL, 0xC056F97503466BD6ULL,
    0xB55303E9845E0CE8ULL, 0x8852D312A0BD9266ULL, 0xE21BD9E424BE4196ULL, 0x2D10E7F21AE126BEULL,
    0x6A5F9E480313A87BULL, 0xAD5D54B6DE67C44CULL, 0xA9A55F11C7691914ULL, 0x0F842D45A56CABB7ULL,
    0x6DC4A982C382338CULL, 0x014FB9E4148830BAULL, 0xC4D06F28A40E800BULL, 0xD531FA419BE5A0B8ULL,
    0xA919738153CC4190ULL, 0x7EC8053E9A4EAC99ULL, 0xF04CB3E83C56FD3DULL, 0x7DDD2841871EA9D0ULL,
    0x856B90B2C7960977ULL, 0xA5525F2A705D866EULL, 0x54D261CF24EC8D2BULL, 0x93B7C9E8CE6DE24CULL,
    0xD48294C0C6D5D9FDULL, 0xD3366084A3FD665BULL, 0x2191863135D39727ULL, 0xC1CDE598DECB6CD2ULL,
    0xBBB566D6514CC1F8ULL, 0xEE0800EACE367ED0ULL, 0x1484A68CF6A92F64ULL, 0x2B3ABBA0C211D12FULL,
    0xA4D2C0D78A4E0B88ULL, 0xE2DE1D83F75484E6ULL, 0x28BB2A46432D11B7ULL, 0x492984E855FFA4E1ULL,
    0x850461720FC725E5ULL, 0x249265FA2CB76072ULL, 0xFFE4459FE51762DCULL, 0xD3B5DF58A69C2E52ULL,
    0x2213AB7C2EDA7404ULL, 0x11F91C3D9A3E3E89ULL, 0x639CD6C96B32D09FULL, 0x8CCC0F6272336DB8ULL,
    0x9F7E0CCB26A8F8FFULL, 0x5E665D1BD1DCA0AEULL, 0xCCDA2DBE186D6D91ULL, 0x0B71C04FB8B6716CULL,
    0x9F3753C70C61D1B5ULL, 0x5AAFC5F4BF43A28FULL, 0x3FE6210CD845A233ULL, 0xFD98AA1D24395CE5ULL,
    0xFCA30B68787C71EAULL, 0x17DE45C48B6B4C55ULL, 0x7D3F76A4868465A3ULL, 0xD72722F9207F0AD7ULL,
    0xE88686775216D7F4ULL, 0xC9E6DF68A6919DF6ULL, 0xCBC4667FE6027178ULL, 0x1E6F881AA5EA4549ULL,
    0x2FE1B1460F4666C4ULL,
};

// The 8 bytes of v, least significant first, built without memcpy (independent of host order).
void le_bytes(uint64_t v, unsigned char out[8]) {
    for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

// {length, seed, XXH3-64}: xxhash.xxh3_64_intdigest(buf[:length], seed), xxhash 4.1.0 (C library 0.8.4)
const Vector kXxh3Vectors[] = {
    {0, 0x0ull, 0x2D06800538D394C2ull},
    {1, 0x0ull, 0xC44BDFF4074EECDBull},
    {2, 0x0ull, 0x7A9978044CB8A8BBull},
    {3, 0x0ull, 0x54247382A8D6B94Dull},
    {4, 0x0ull, 0xE5DC74BC51848A51ull},
    {5, 0x0ull, 0xE4243F00720306BBull},
    {6, 0x0ull, 0x27B56A84CD2D7325ull},
    {7, 0x0ull, 0x9941E0007F555E50ull},
    {8, 0x0ull, 0x24CCC9ACAA9F65E4ull},
    {9, 0x0ull, 0x14D5001C15DD3F2Bull},
    {10, 0x0ull, 0x1C117F233FBC3C14ull},
    {11, 0x0ull, 0x889839B4C796DDD6ull},
    {12, 0x0ull, 0xA713DAF0DFBB77E7ull},
    {13, 0x0ull, 0x2EB03C6E66BA6524ull},
    {14, 0x0ull, 0x1AC0BBDA2B9FCF03ull},
    {15, 0x0ull, 0x45556D4D6E1798BCull},
    {16, 0x0ull, 0x981B17D36C7498C9ull},
    {17, 0x0ull, 0x796F5ACD3A60F862ull},
    {18, 0x0ull, 0x6CFEAA845E6EBCD1ull},
    {19, 0x0ull, 0x750D97933D2DC370ull},
    {20, 0x0ull, 0x4BC18275FB46F223ull},
    {21, 0x0ull, 0xCE0376AB8CDD7F20ull},
    {22, 0x0ull, 0x85552B609DB72220ull},
    {23, 0x0ull, 0xE070C50BE9861FF8ull},
    {24, 0x0ull, 0xA3FE70BF9D3510EBull},
    {25, 0x0ull, 0x9E41329ED21A1D6Dull},
    {26, 0x0ull, 0x667D3AAA920C9A05ull},
    {27, 0x0ull, 0xF54AF525A7B4D3B9ull},
    {28, 0x0ull, 0x61D5D60DFED01688ull},
    {29, 0x0ull, 0xA375819F83DDCCE6ull},
    {30, 0x0ull, 0xDA4953A393E8B1F3ull},
    {31, 0x0ull, 0x5D516692CA764C50ull},
    {32, 0x0ull, 0x9FEADDBDBF57EED3ull},
    {33, 0x0ull, 0xABFB2D081B400A10ull},
    {34, 0x0ull, 0xBAA04607C7A24977ull},
    {35, 0x0ull, 0xD1A58161FDB7B1A6ull},
    {36, 0x0ull, 0xEF099B53BC7530C0ull},
    {37, 0x0ull, 0xDC785F67BBA35B29ull},
    {38, 0x0ull, 0x635F55CF00144E48ull},
    {39, 0x0ull, 0x297B5E4CD9E19E20ull},
    {40, 0x0ull, 0x70FB5C84CB108B82ull},
    {47, 0x0ull, 0x050B544C7C6147BDull},
    {48, 0x0ull, 0x397DA259ECBA1F11ull},
    {63, 0x0ull, 0x83D74A75F2C2577Aull},
    {64, 0x0ull, 0x9CB48487720EC49Dull},
    {65, 0x0ull, 0xFD81AAC4BEBC3883ull},
    {80, 0x0ull, 0xBCDEFBBB2C47C90Aull},
    {95, 0x0ull, 0xC0DD460B48116CDAull},
    {96, 0x0ull, 0x935A769A7F94776Full},
    {97, 0x0ull, 0xCA4CA268FD3C3A6Cull},
    {112, 0x0ull, 0xD13D8F57931EEF19ull},
    {127, 0x0ull, 0x2408ED71323D6096ull},
    {128, 0x0ull, 0xFCFF24126754D861ull},
    {129, 0x0ull, 0x98F1B0A679A2CA29ull},
    {130, 0x0ull, 0x7F6C531CF53EEB30ull},
    {143, 0x0ull, 0x7A7813693F1F4EDBull},
    {144, 0x0ull, 0xC440D47E5F03FE58ull},
    {200, 0x0ull, 0xBDDCA58935D7C038ull},
    {239, 0x0ull, 0x16CE2B9D3B28805Dull},
    {240, 0x0ull, 0x81C3C2B67F568CCFull},
    {241, 0x0ull, 0xC5A639ECD2030E5Eull},
    {255, 0x0ull, 0xE98F979F4ED8A197ull},
    {256, 0x0ull, 0x55DE574AD89D0AC5ull},
    {257, 0x0ull, 0xB17FD5A8AE75BB0Bull},
    {500, 0x0ull, 0xEF35ACEB3B341A05ull},
    {1023, 0x0ull, 0x87A8F7B2F2E22496ull},
    {1024, 0x0ull, 0xDD85C9B5C1109C5Cull},
    {1025, 0x0ull, 0xD870C0FA13211C6Aull},
    {1087, 0x0ull, 0x047F181E7C8A41B9ull},
    {1088, 0x0ull, 0xCC1450EA6B52A8F4ull},
    {1089, 0x0ull, 0xEF727B2EFFC4CC8Cull},
    {2047, 0x0ull, 0xB36ECE19FCA2197Full},
    {2048, 0x0ull, 0xDD59E2C3A5F038E0ull},
    {2049, 0x0ull, 0xD3AFA4329779B921ull},
    {2600, 0x0ull, 0x793556D83DF49115ull},
    {0, 0x9E3779B1ull, 0xF702CA3814DE2125ull},
    {1, 0x9E3779B1ull, 0xB53D5557E7F76F8Dull},
    {2, 0x9E3779B1ull, 0x8295910C7638B180ull},
    {3, 0x9E3779B1ull, 0xF173D14DAD53A5DCull},
    {4, 0x9E3779B1ull, 0x6977C7C3AD9421B9ull},
    {5, 0x9E3779B1ull, 0x116CC72EBFCCCA91ull},
    {6, 0x9E3779B1ull, 0xFD7C7AF0CDE06034ull},
    {7, 0x9E3779B1ull, 0xC8066B3C9AC69B6Full},
    {8, 0x9E3779B1ull, 0x360073B0548DBD24ull},
    {9, 0x9E3779B1ull, 0xCE394E48812AA7E3ull},
    {10, 0x9E3779B1ull, 0xE79F2F52B5048F4Cull},
    {11, 0x9E3779B1ull, 0xE1AD152D03DEF288ull},
    {12, 0x9E3779B1ull, 0x8922341ECA861F0Eull},
    {13, 0x9E3779B1ull, 0xD1717859A6DD2316ull},
    {14, 0x9E3779B1ull, 0xCE92AA806B1B4E19ull},
    {15, 0x9E3779B1ull, 0xE7BC9EF2380263DDull},
    {16, 0x9E3779B1ull, 0xB40F1F6CDB1569CCull},
    {17, 0x9E3779B1ull, 0xAF8CB0BC2C230DAFull},
    {18, 0x9E3779B1ull, 0x4B9A3E700CE1689Dull},
    {19, 0x9E3779B1ull, 0x528BEB983CCE8116ull},
    {20, 0x9E3779B1ull, 0xBD39188544580AC5ull},
    {21, 0x9E3779B1ull, 0x5CF8DC3C7B5B8A02ull},
    {22, 0x9E3779B1ull, 0xA9DD95CA474A9C19ull},
    {23, 0x9E3779B1ull, 0x323BC7015F105560ull},
    {24, 0x9E3779B1ull, 0x84A011695F3489D5ull},
    {25, 0x9E3779B1ull, 0xA4C082B5B0134F4Dull},
    {26, 0x9E3779B1ull, 0x6C2A2413FBC82456ull},
    {27, 0x9E3779B1ull, 0x69A34767475A7AE0ull},
    {28, 0x9E3779B1ull, 0x6C041F2066629957ull},
    {29, 0x9E3779B1ull, 0x6AB29B853D8BD596ull},
    {30, 0x9E3779B1ull, 0x406857FE0F4949DDull},
    {31, 0x9E3779B1ull, 0x8F5B72BB387D6265ull},
    {32, 0x9E3779B1ull, 0x04FE6AA559EE0C7Eull},
    {33, 0x9E3779B1ull, 0x0F2422E0C42A54FCull},
    {34, 0x9E3779B1ull, 0xAE9EDAD52A047271ull},
    {35, 0x9E3779B1ull, 0x42FC32C81EADABD3ull},
    {36, 0x9E3779B1ull, 0x5F674551614D4FAEull},
    {37, 0x9E3779B1ull, 0x8B84016E68F59094ull},
    {38, 0x9E3779B1ull, 0x64D52EA708371C9Aull},
    {39, 0x9E3779B1ull, 0x0743EA97D4258B96ull},
    {40, 0x9E3779B1ull, 0xDB0C61CD1859B3A6ull},
    {47, 0x9E3779B1ull, 0x1066EC10C15413D1ull},
    {48, 0x9E3779B1ull, 0x11F47041A93C3EBCull},
    {63, 0x9E3779B1ull, 0x2EA44B0A270618F1ull},
    {64, 0x9E3779B1ull, 0xEC06A1648C27E203ull},
    {65, 0x9E3779B1ull, 0x6BF1B3C68555B92Eull},
    {80, 0x9E3779B1ull, 0x5A5DFDF2AFC5BF47ull},
    {95, 0x9E3779B1ull, 0xF332393C79DDFB46ull},
    {96, 0x9E3779B1ull, 0x7C0400A2ADFD81DCull},
    {97, 0x9E3779B1ull, 0x3B345FC76580A2D1ull},
    {112, 0x9E3779B1ull, 0x0E95A6E590C1725Cull},
    {127, 0x9E3779B1ull, 0x65107F5A08C6FC80ull},
    {128, 0x9E3779B1ull, 0xA3CA60447DE981D1ull},
    {129, 0x9E3779B1ull, 0xC861FFC49C2BF14Full},
    {130, 0x9E3779B1ull, 0xD35F99330ADE0853ull},
    {143, 0x9E3779B1ull, 0x25EDFBF621AFC23Eull},
    {144, 0x9E3779B1ull, 0x8E992EC5769637EBull},
    {200, 0x9E3779B1ull, 0x6AD7557DF4F23A4Aull},
    {239, 0x9E3779B1ull, 0x0836C2B3FC419650ull},
    {240, 0x9E3779B1ull, 0x507820EA74B895B0ull},
    {241, 0x9E3779B1ull, 0x5927E3637BAC8149ull},
    {255, 0x9E3779B1ull, 0x437EA109CB7CE24Dull},
    {256, 0x9E3779B1ull, 0x443D04D43F60C57Full},
    {257, 0x9E3779B1ull, 0x02F16A1476C65D95ull},
    {500, 0x9E3779B1ull, 0x0E7DF857FDF28119ull},
    {1023, 0x9E3779B1ull, 0xC38922D5971CD2D7ull},
    {1024, 0x9E3779B1ull, 0xB8B95C07CD4A75FAull},
    {1025, 0x9E3779B1ull, 0x2F15255340AE4F6Cull},
    {1087, 0x9E3779B1ull, 0x64D6176CC591AFFAull},
    {1088, 0x9E3779B1ull, 0xD4C2D1BFFC3370A5ull},
    {1089, 0x9E3779B1ull, 0xA4662CC10D3C4269ull},
    {2047, 0x9E3779B1ull, 0x8141F69F4BACDEA2ull},
    {2048, 0x9E3779B1ull, 0x230D43F30206260Bull},
    {2049, 0x9E3779B1ull, 0x60E0F49946D79DAFull},
    {2600, 0x9E3779B1ull, 0x74E6698BB68E6BFDull},
    {0, 0x9E3779B97F4A7C15ull, 0x602B0E2CD6662C8Bull},
    {1, 0x9E3779B97F4A7C15ull, 0x062B185E4E01441Aull},
    {2, 0x9E3779B97F4A7C15ull, 0xB24708F3054642FAull},
    {3, 0x9E3779B97F4A7C15ull, 0xC65B8830FE8027F7ull},
    {4, 0x9E3779B97F4A7C15ull, 0x149892600D6BEE31ull},
    {5, 0x9E3779B97F4A7C15ull, 0x06595676BD7413C8ull},
    {6, 0x9E3779B97F4A7C15ull, 0x658CC09F05F2C6E2ull},
    {7, 0x9E3779B97F4A7C15ull, 0xD3A7D7AC6049DDB2ull},
    {8, 0x9E3779B97F4A7C15ull, 0x5E7D2C66021B100Aull},
    {9, 0x9E3779B97F4A7C15ull, 0x70659674D83A612Aull},
    {10, 0x9E3779B97F4A7C15ull, 0x91DF57BF04D9CB77ull},
    {11, 0x9E3779B97F4A7C15ull, 0xAE60DA4038B07F17ull},
    {12, 0x9E3779B97F4A7C15ull, 0xD126E30C8C063CDAull},
    {13, 0x9E3779B97F4A7C15ull, 0xA25E53A578460B77ull},
    {14, 0x9E3779B97F4A7C15ull, 0xB282222832802080ull},
    {15, 0x9E3779B97F4A7C15ull, 0xD1B3602CE6C2CD24ull},
    {16, 0x9E3779B97F4A7C15ull, 0x710452D8B1DB3EEDull},
    {17, 0x9E3779B97F4A7C15ull, 0x23116A33AA39FB74ull},
    {18, 0x9E3779B97F4A7C15ull, 0x599FAD45A0BB4001ull},
    {19, 0x9E3779B97F4A7C15ull, 0x412B8BB753E0E747ull},
    {20, 0x9E3779B97F4A7C15ull, 0xFC48CA67909E10CDull},
    {21, 0x9E3779B97F4A7C15ull, 0x81A34A3AF90A9735ull},
    {22, 0x9E3779B97F4A7C15ull, 0x4753B1E2F6A28C3Eull},
    {23, 0x9E3779B97F4A7C15ull, 0xC5F0051D96B5FF70ull},
    {24, 0x9E3779B97F4A7C15ull, 0x658F3911665C709Dull},
    {25, 0x9E3779B97F4A7C15ull, 0x964711EE4EA46135ull},
    {26, 0x9E3779B97F4A7C15ull, 0xC396B14584768FB8ull},
    {27, 0x9E3779B97F4A7C15ull, 0x80FBE657FEA072CCull},
    {28, 0x9E3779B97F4A7C15ull, 0x65A031F0322E9C1Eull},
    {29, 0x9E3779B97F4A7C15ull, 0x91EE74F5F8BAB6F3ull},
    {30, 0x9E3779B97F4A7C15ull, 0xABCCA7AB53E0EA0Aull},
    {31, 0x9E3779B97F4A7C15ull, 0x1F03454AB571C927ull},
    {32, 0x9E3779B97F4A7C15ull, 0x96479BADCBD9DB3Aull},
    {33, 0x9E3779B97F4A7C15ull, 0x4521A39CE3B7D507ull},
    {34, 0x9E3779B97F4A7C15ull, 0x6467C6466CC665D3ull},
    {35, 0x9E3779B97F4A7C15ull, 0x15C5F427B0F80B4Aull},
    {36, 0x9E3779B97F4A7C15ull, 0x73DB07D1E0A5B7DEull},
    {37, 0x9E3779B97F4A7C15ull, 0xA436C0CD2F90E78Cull},
    {38, 0x9E3779B97F4A7C15ull, 0x7F336D275A705E94ull},
    {39, 0x9E3779B97F4A7C15ull, 0xE3590C4E8DDD3222ull},
    {40, 0x9E3779B97F4A7C15ull, 0x83E9FE2DC2ABA0A3ull},
    {47, 0x9E3779B97F4A7C15ull, 0x05EF2F84BEAC9E03ull},
    {48, 0x9E3779B97F4A7C15ull, 0xA99229DC8D74D585ull},
    {63, 0x9E3779B97F4A7C15ull, 0xE4FFB156B101DDD3ull},
    {64, 0x9E3779B97F4A7C15ull, 0x249350B2C74D5A6Full},
    {65, 0x9E3779B97F4A7C15ull, 0xAEA86FABBDD80144ull},
    {80, 0x9E3779B97F4A7C15ull, 0xF2953B6E97E9F644ull},
    {95, 0x9E3779B97F4A7C15ull, 0x54AA60362F8DB9CDull},
    {96, 0x9E3779B97F4A7C15ull, 0xA467A5B7DB81CA9Eull},
    {97, 0x9E3779B97F4A7C15ull, 0xB56ABE760EF90CB3ull},
    {112, 0x9E3779B97F4A7C15ull, 0x5C88C2540BC79391ull},
    {127, 0x9E3779B97F4A7C15ull, 0xCEE405479A13AFBAull},
    {128, 0x9E3779B97F4A7C15ull, 0xFBA7C632B80A1321ull},
    {129, 0x9E3779B97F4A7C15ull, 0x3AECEF1235232004ull},
    {130, 0x9E3779B97F4A7C15ull, 0x86F295D682A92417ull},
    {143, 0x9E3779B97F4A7C15ull, 0xC53FEA7D316EA6E8ull},
    {144, 0x9E3779B97F4A7C15ull, 0x4CE2E2F309FB8B9Dull},
    {200, 0x9E3779B97F4A7C15ull, 0xAA38CC8139746D64ull},
    {239, 0x9E3779B97F4A7C15ull, 0x9165D709CE0218ABull},
    {240, 0x9E3779B97F4A7C15ull, 0x4DC0485C72395FEEull},
    {241, 0x9E3779B97F4A7C15ull, 0xAD5088153F20248Aull},
    {255, 0x9E3779B97F4A7C15ull, 0xBB65CFE58D8334F3ull},
    {256, 0x9E3779B97F4A7C15ull, 0x7560125F38AB6F8Dull},
    {257, 0x9E3779B97F4A7C15ull, 0x0D51EB95AE87FEA5ull},
    {500, 0x9E3779B97F4A7C15ull, 0x387A597DC1D79495ull},
    {1023, 0x9E3779B97F4A7C15ull, 0xD6CF685B50C9DDB7ull},
    {1024, 0x9E3779B97F4A7C15ull, 0x425B8CB47612132Dull},
    {1025, 0x9E3779B97F4A7C15ull, 0x3124DF31A2F8D000ull},
    {1087, 0x9E3779B97F4A7C15ull, 0xF8ABBE4FFFF1B172ull},
    {1088, 0x9E3779B97F4A7C15ull, 0xE035241ED8E2AD77ull},
    {1089, 0x9E3779B97F4A7C15ull, 0x555922C10FE49586ull},
    {2047, 0x9E3779B97F4A7C15ull, 0x1DCEC1CF3882B26Dull},
    {2048, 0x9E3779B97F4A7C15ull, 0xEEFD042EEC545A9Cull},
    {2049, 0x9E3779B97F4A7C15ull, 0x4877A60A06FF3F4Dull},
    {2600, 0x9E3779B97F4A7C15ull, 0x5003BB4756511255ull},
};

}  // namespace

TEST_CASE(xxh64_reference_sanity_vectors) {
    const std::vector<unsigned char> buf = fill_sanity_buffer(222);
    for (const Vector& v : kSanity) {
        cktest::context() = "len=" + std::to_string(v.len) + " seed=" + std::to_string(v.seed);
        CHECK_EQ(xxh64(v.len ? buf.data() : nullptr, v.len, v.seed), v.expected);
        CHECK_EQ(hash_bytes(buf.data(), v.len, v.seed), v.expected);
    }
}

TEST_CASE(xxh64_published_strings) {
    for (const StringVector& v : kStrings) {
        cktest::context() = std::string("text=\"") + v.text + "\" seed=" + std::to_string(v.seed);
        CHECK_EQ(xxh64(v.text, std::strlen(v.text), v.seed), v.expected);
    }
}

TEST_CASE(xxh64_every_length_0_to_100) {
    const std::vector<unsigned char> buf = fill_sanity_buffer(101);
    struct Table {
        uint64_t seed;
        const uint64_t* expected;
    };
    const Table tables[] = {{0, kLen0to100Seed0}, {PRIME32, kLen0to100SeedPrime32}, {~0ull, kLen0to100SeedAllOnes}};
    for (const Table& t : tables) {
        for (size_t len = 0; len <= 100; ++len) {
            cktest::context() = "len=" + std::to_string(len) + " seed=" + std::to_string(t.seed);
            CHECK_EQ(xxh64(buf.data(), len, t.seed), t.expected[len]);
        }
    }
}

TEST_CASE(xxh64_does_not_depend_on_alignment) {
    const std::vector<unsigned char> buf = fill_sanity_buffer(101);
    std::vector<unsigned char> shifted(101 + 16);
    for (size_t offset = 0; offset < 16; ++offset) {
        std::memcpy(shifted.data() + offset, buf.data(), 101);
        for (size_t len = 0; len <= 100; ++len) {
            cktest::context() = "offset=" + std::to_string(offset) + " len=" + std::to_string(len);
            CHECK_EQ(xxh64(shifted.data() + offset, len, 7), xxh64(buf.data(), len, 7));
        }
    }
}

TEST_CASE(xxh64_reads_every_byte_and_no_more) {
    // Flipping any bit of the input changes the hash; bytes past the end do not matter.
    for (size_t len = 1; len <= 100; ++len) {
        std::vector<unsigned char> buf = fill_sanity_buffer(len + 8);
        const uint64_t h = xxh64(buf.data(), len, 0);
        for (size_t i = 0; i < len; ++i) {
            for (int bit = 0; bit < 8; bit += 3) {
                buf[i] ^= static_cast<unsigned char>(1u << bit);
                cktest::context() = "len=" + std::to_string(len) + " byte=" + std::to_string(i);
                CHECK(xxh64(buf.data(), len, 0) != h);
                buf[i] ^= static_cast<unsigned char>(1u << bit);
            }
        }
        for (size_t i = len; i < len + 8; ++i) buf[i] ^= 0xFF;
        cktest::context() = "len=" + std::to_string(len);
        CHECK_EQ(xxh64(buf.data(), len, 0), h);
    }
}

// The block hash of string columns (hash_block.hpp) gives the published values: keys of every
// length 0..100 cut from the sanity buffer, hashed in blocks of 1 to 32, with the readable end far
// away (short keys take the vector kernel) and exactly at the buffer's end (the last keys' rows
// would cross it: the scalar path).
TEST_CASE(hash_bytes_block_gives_the_published_values) {
    const std::vector<unsigned char> buf = fill_sanity_buffer(101);
    std::vector<const unsigned char*> key;
    std::vector<uint32_t> len;
    for (uint32_t l = 0; l <= 100; ++l) {
        key.push_back(buf.data());
        len.push_back(l);
    }
    for (const unsigned char* end : {buf.data() + buf.size(), buf.data() + 20}) {
        for (unsigned block : {1u, 3u, 4u, 5u, 32u}) {
            std::vector<uint64_t> out(key.size(), 0);
            for (size_t start = 0; start < key.size(); start += block) {
                const unsigned n = static_cast<unsigned>(std::min<size_t>(block, key.size() - start));
                cuckoo::hash_bytes_block(key.data() + start, len.data() + start, n, PRIME32, end, out.data() + start);
            }
            for (size_t l = 0; l <= 100; ++l) {
                cktest::context() = "len=" + std::to_string(l) + " block=" + std::to_string(block);
                CHECK_EQ(out[l], kLen0to100SeedPrime32[l]);
            }
        }
    }
}

// Random keys packed back to back in a buffer that ends right after the last one (ASan sees any
// read past it), at every alignment, with random bytes after each key inside its 32-byte row:
// hash_bytes_block == hash_bytes key by key.
TEST_CASE(hash_bytes_block_equals_hash_bytes) {
    cktest::Rng rng(61);
    for (int round = 0; round < 400; ++round) {
        const unsigned n = static_cast<unsigned>(rng.below(cuckoo::kBatchBlock + 1));
        std::vector<uint32_t> len(n);
        size_t total = static_cast<size_t>(rng.below(8));  // leading bytes: alignment
        for (uint32_t& l : len) {
            l = static_cast<uint32_t>(rng.below(4) == 0 ? rng.below(80) : rng.below(40));
            total += l;
        }
        std::vector<unsigned char> data(total);
        for (unsigned char& c : data) c = static_cast<unsigned char>(rng.next());
        std::vector<const unsigned char*> key(n);
        size_t at = total;
        for (unsigned j = n; j-- > 0;) {  // last key at the end of the buffer
            at -= len[j];
            key[j] = data.data() + at;
        }
        const uint64_t seed = rng.next();
        std::vector<uint64_t> out(n + 1, 12345);
        cuckoo::hash_bytes_block(key.data(), len.data(), n, seed, data.data() + data.size(), out.data());
        for (unsigned j = 0; j < n; ++j) {
            cktest::context() = "round=" + std::to_string(round) + " key=" + std::to_string(j) + " len=" + std::to_string(len[j]);
            CHECK_EQ(out[j], cuckoo::hash_bytes(key[j], len[j], seed));
        }
        CHECK_EQ(out[n], 12345u);  // nothing written past n
    }
}

// NumPy 'S'-style items (fixed width, NUL padding, NULs inside too) in an array that ends at the
// last item: hash_padded_block == hash_bytes of each item without its trailing NULs, every width.
TEST_CASE(hash_padded_block_strips_the_padding) {
    cktest::Rng rng(67);
    for (size_t width = 1; width <= 40; ++width) {
        for (int round = 0; round < 20; ++round) {
            const unsigned n = static_cast<unsigned>(1 + rng.below(cuckoo::kBatchBlock));
            std::vector<unsigned char> items(n * width, 0);
            for (unsigned j = 0; j < n; ++j) {
                const size_t used = rng.below(width + 1);
                for (size_t i = 0; i < used; ++i) items[j * width + i] = static_cast<unsigned char>(rng.below(3) ? rng.next() : 0);
            }
            const uint64_t seed = rng.next();
            std::vector<uint64_t> out(n);
            cuckoo::hash_padded_block(items.data(), width, n, seed, items.data() + items.size(), out.data());
            for (unsigned j = 0; j < n; ++j) {
                const unsigned char* p = items.data() + j * width;
                size_t l = width;
                while (l > 0 && p[l - 1] == 0) --l;
                cktest::context() = "width=" + std::to_string(width) + " item=" + std::to_string(j);
                CHECK_EQ(out[j], cuckoo::hash_bytes(p, l, seed));
            }
        }
    }
}

TEST_CASE(xxh3_reference_vectors) {
    const std::vector<unsigned char> buf = fill_sanity_buffer(2600);
    for (const Vector& v : kXxh3Vectors) {
        cktest::context() = "len=" + std::to_string(v.len) + " seed=" + std::to_string(v.seed);
        CHECK_EQ(cuckoo::xxh3_64(v.len ? buf.data() : nullptr, v.len, v.seed), v.expected);
        CHECK_EQ(cuckoo::xxh3_bytes(buf.data(), v.len, v.seed), v.expected);  // the bulk loops' entry
        if (v.len >= 8 && v.len <= 32) CHECK_EQ(cuckoo::xxh3_8to32(buf.data(), v.len, v.seed), v.expected);
        if (v.len == 8) CHECK_EQ(cuckoo::xxh3_u64(cuckoo::load_le64(buf.data()), v.seed), v.expected);
        const cuckoo::KeyHasher hasher{v.seed, cuckoo::HashAlgorithm::xxh3};
        CHECK_EQ(hasher.hash_key(buf.data(), v.len), v.expected);
        CHECK_EQ(hasher.hash_one_key(buf.data(), v.len), v.expected);  // the Python objects' entry
    }
}

// hash_one_key (Python objects, one at a time) equals hash_key (the bulk loops) for both
// algorithms, every length up to 300 and random seeds: a key's hash is the same on every path.
TEST_CASE(hash_one_key_equals_hash_key) {
    const std::vector<unsigned char> buf = fill_sanity_buffer(300);
    cktest::Rng rng(61);
    for (const cuckoo::HashAlgorithm algorithm : {cuckoo::HashAlgorithm::xxh3, cuckoo::HashAlgorithm::xxh64}) {
        for (size_t len = 0; len <= 300; ++len) {
            const cuckoo::KeyHasher hasher{rng.next(), algorithm};
            cktest::context() = std::string(cuckoo::hash_algorithm_name(algorithm)) + " len=" + std::to_string(len);
            CHECK_EQ(hasher.hash_one_key(buf.data(), len), hasher.hash_key(buf.data(), len));
        }
    }
}

TEST_CASE(xxh3_reads_every_byte_and_no_more_at_any_alignment) {
    for (size_t len = 1; len <= 300; len += (len < 70 ? 1 : 23)) {
        std::vector<unsigned char> buf = fill_sanity_buffer(len + 16);
        const uint64_t h = cuckoo::xxh3_bytes(buf.data(), len, 7);
        for (size_t offset = 1; offset < 8; ++offset) {
            std::vector<unsigned char> shifted(len + offset);
            std::memcpy(shifted.data() + offset, buf.data(), len);
            cktest::context() = "len=" + std::to_string(len) + " offset=" + std::to_string(offset);
            CHECK_EQ(cuckoo::xxh3_bytes(shifted.data() + offset, len, 7), h);
        }
        for (size_t i = 0; i < len; ++i) {
            buf[i] ^= 0x10;
            cktest::context() = "len=" + std::to_string(len) + " byte=" + std::to_string(i);
            CHECK(cuckoo::xxh3_bytes(buf.data(), len, 7) != h);
            buf[i] ^= 0x10;
        }
        for (size_t i = len; i < len + 16; ++i) buf[i] ^= 0xFF;
        cktest::context() = "len=" + std::to_string(len);
        CHECK_EQ(cuckoo::xxh3_bytes(buf.data(), len, 7), h);
    }
}

// The filter-level block hashes (what key sources call) equal the scalar key hash of the same
// algorithm, for both algorithms: integers, packed keys ending at their buffer's end, padded items.
TEST_CASE(block_hashes_follow_the_hash_algorithm) {
    cktest::Rng rng(71);
    for (cuckoo::HashAlgorithm algorithm : {cuckoo::HashAlgorithm::xxh3, cuckoo::HashAlgorithm::xxh64}) {
        for (int round = 0; round < 200; ++round) {
            const cuckoo::KeyHasher hasher{rng.next(), algorithm};
            // Up to three blocks: callers may pass more than kBatchBlock keys at once.
            const unsigned n = static_cast<unsigned>(1 + rng.below(3 * cuckoo::kBatchBlock));
            cktest::context() = std::string(cuckoo::hash_algorithm_name(algorithm)) + " round=" + std::to_string(round);
            std::vector<uint64_t> values(n), out(n);
            for (uint64_t& v : values) v = rng.next();
            cuckoo::hash_ints_block(hasher, values.data(), n, out.data());
            for (unsigned j = 0; j < n; ++j) CHECK_EQ(out[j], hasher.hash_int(values[j]));
#if CUCKOO_X86_DISPATCH
            // Each vector copy of XXH3 on integers, whichever hash_ints_block picked on this CPU.
            if (algorithm == cuckoo::HashAlgorithm::xxh3 && cuckoo::kernels::use_avx2()) {
                std::vector<uint64_t> out2(n);
                cuckoo::kernels::xxh3_u64_block_avx2(values.data(), n, hasher.seed, out2.data());
                for (unsigned j = 0; j < n; ++j) CHECK_EQ(out2[j], hasher.hash_int(values[j]));
                if (cuckoo::kernels::use_avx512()) {
                    std::vector<uint64_t> out3(n);
                    cuckoo::kernels::xxh3_u64_block_avx512(values.data(), n, hasher.seed, out3.data());
                    for (unsigned j = 0; j < n; ++j) CHECK_EQ(out3[j], hasher.hash_int(values[j]));
                }
            }
#endif

            std::vector<uint32_t> len(n);
            size_t total = 0;
            for (uint32_t& l : len) total += (l = static_cast<uint32_t>(rng.below(4) == 0 ? rng.below(300) : rng.below(40)));
            std::vector<unsigned char> data(total);
            for (unsigned char& c : data) c = static_cast<unsigned char>(rng.next());
            std::vector<const unsigned char*> key(n);
            size_t at = 0;
            for (unsigned j = 0; j < n; ++j) { key[j] = data.data() + at; at += len[j]; }
            cuckoo::hash_bytes_block(hasher, key.data(), len.data(), n, data.data() + data.size(), out.data());
            for (unsigned j = 0; j < n; ++j) CHECK_EQ(out[j], hasher.hash_key(key[j], len[j]));

            const size_t width = 1 + rng.below(70);
            std::vector<unsigned char> items(n * width, 0);
            for (unsigned j = 0; j < n; ++j)
                for (size_t i = 0, used = rng.below(width + 1); i < used; ++i)
                    items[j * width + i] = static_cast<unsigned char>(rng.below(3) ? rng.next() : 0);
            cuckoo::hash_padded_block(hasher, items.data(), width, n, items.data() + items.size(), out.data());
            for (unsigned j = 0; j < n; ++j) {
                const unsigned char* p = items.data() + j * width;
                size_t l = width;
                while (l > 0 && p[l - 1] == 0) --l;
                CHECK_EQ(out[j], hasher.hash_key(p, l));
            }
        }
    }
}

TEST_CASE(xxh64_seed_matters) {
    const std::vector<unsigned char> buf = fill_sanity_buffer(64);
    for (size_t len : {size_t(0), size_t(1), size_t(8), size_t(31), size_t(32), size_t(64)}) {
        CHECK(xxh64(buf.data(), len, 0) != xxh64(buf.data(), len, 1));
        CHECK(xxh64(buf.data(), len, 1) != xxh64(buf.data(), len, uint64_t(1) << 63));
    }
}

TEST_CASE(hash_u64_published_values) {
    for (const U64Vector& v : kU64) {
        cktest::context() = "value=" + cktest::show(v.value);
        CHECK_EQ(hash_u64(v.value, 0), v.expected);
    }
}

TEST_CASE(hash_u64_equals_xxh64_of_little_endian_bytes) {
    cktest::Rng rng(1);
    std::vector<uint64_t> values = {0, 1, 2, 0xFF, 0x100, 0x7FFFFFFFFFFFFFFFull, 0x8000000000000000ull,
                                    ~0ull, ~0ull - 1, 0x0123456789ABCDEFull, 0xFEDCBA9876543210ull};
    for (int i = 0; i < 64; ++i) values.push_back(uint64_t(1) << i);
    for (int i = 0; i < 20000; ++i) values.push_back(rng.next());
    std::vector<uint64_t> seeds = {0, 1, PRIME32, PRIME64, ~0ull, 0x8000000000000000ull};
    for (int i = 0; i < 10; ++i) seeds.push_back(rng.next());
    for (uint64_t seed : seeds) {
        for (uint64_t v : values) {
            unsigned char bytes[8];
            le_bytes(v, bytes);
            const uint64_t expected = xxh64(bytes, 8, seed);
            const uint64_t got = hash_u64(v, seed);
            CHECK_MSG(got == expected, "value=" + cktest::show(v) + " seed=" + cktest::show(seed));
        }
    }
    // A signed key is hashed as its two's-complement bit pattern.
    unsigned char minus_one[8];
    std::memset(minus_one, 0xFF, 8);
    CHECK_EQ(hash_u64(static_cast<uint64_t>(int64_t(-1)), 0), xxh64(minus_one, 8, 0));
}

TEST_CASE(little_endian_loads_and_stores) {
    const unsigned char bytes[9] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, 0x55};
    CHECK_EQ(cuckoo::load_le64(bytes), 0xEFCDAB8967452301ull);
    CHECK_EQ(cuckoo::load_le64(bytes + 1), 0x55EFCDAB89674523ull);
    CHECK_EQ(cuckoo::load_le32(bytes), 0x67452301u);
    CHECK_EQ(cuckoo::load_le32(bytes + 5), 0x55EFCDABu);
    unsigned char out[10] = {0};
    cuckoo::store_le64(out + 1, 0x0807060504030201ull);
    for (int i = 0; i < 8; ++i) CHECK_EQ(out[1 + i], static_cast<unsigned char>(i + 1));
    CHECK_EQ(out[0], 0);
    CHECK_EQ(out[9], 0);
    CHECK_EQ(cuckoo::byteswap64(0x0102030405060708ull), 0x0807060504030201ull);
    CHECK_EQ(cuckoo::rotl64(0x8000000000000001ull, 1), 0x0000000000000003ull);
    CHECK_EQ(cuckoo::rotl64(0x0123456789ABCDEFull, 63), 0x8091A2B3C4D5E6F7ull);
}

TEST_CASE(mix64_is_the_splitmix64_finaliser) {
    // SplitMix64 seeded with 0 outputs mix64(k * 0x9E3779B97F4A7C15) for k = 1, 2, 3, ...; its
    // published first outputs:
    const uint64_t gamma = 0x9E3779B97F4A7C15ull;
    CHECK_EQ(cuckoo::mix64(gamma), 0xE220A8397B1DCDAFull);
    CHECK_EQ(cuckoo::mix64(2 * gamma), 0x6E789E6AA1B965F4ull);
    CHECK_EQ(cuckoo::mix64(3 * gamma), 0x06C45D188009454Full);
    CHECK_EQ(cuckoo::mix64(0), 0ull);
    CHECK_EQ(cuckoo::mix64(1), 0x5692161D100B05E5ull);
    CHECK_EQ(cuckoo::mix64(~0ull), 0xB4D055FCF2CBBD7Bull);
}

TEST_CASE(reduce32_maps_onto_the_range) {
    cktest::Rng rng(2);
    const uint64_t ns[] = {1, 2, 7, 8, 1000, 123456, (uint64_t(1) << 31) + 1, uint64_t(1) << 32};
    for (uint64_t n : ns) {
        cktest::context() = "n=" + std::to_string(n);
        CHECK_EQ(cuckoo::reduce32(0, n), 0u);
        CHECK_EQ(cuckoo::reduce32(0xFFFFFFFFu, n), n - 1);
        for (int i = 0; i < 1000; ++i) {
            const uint32_t x = static_cast<uint32_t>(rng.next());
            const uint64_t r = cuckoo::reduce32(x, n);
            CHECK(r < n);
            // r = floor(x * n / 2^32): r * 2^32 <= x * n < (r + 1) * 2^32 (x * n < 2^64 here).
            const uint64_t product = static_cast<uint64_t>(x) * n;
            CHECK((r << 32) <= product && product - (r << 32) < (uint64_t(1) << 32));
        }
    }
}

int main(int argc, char** argv) { return cktest::run_all(argc, argv); }
