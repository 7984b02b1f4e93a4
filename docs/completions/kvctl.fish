function __kvctl_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __kvctl_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __kvctl_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __kvctl_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __kvctl_parse_tokens -S
    set -l unparsed_tokens (__kvctl_tokens -pc)
    switch $unparsed_tokens[1]
    case 'kvctl'
        __kvctl_parse_subcommand 0 'version' 'h/help'
        switch $unparsed_tokens[1]
        case 'init'
            __kvctl_parse_subcommand 0 'server=' 'invite=' 'invite-file=' 'name=' 'recovery-file=' 'yes' 'kdf=' 'passphrase' 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
        case 'status'
            __kvctl_parse_subcommand 0 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
        case 'device'
            __kvctl_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'enroll'
                __kvctl_parse_subcommand 0 'server=' 'account=' 'name=' 'passphrase' 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            case 'link'
                __kvctl_parse_subcommand 0 'server=' 'account=' 'name=' 'home=' 'json' 'insecure-http' 'ca-cert=' 'poll=' 'passphrase' 'version' 'h/help'
            case 'approve'
                __kvctl_parse_subcommand 1 'poll=' 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            case 'list'
                __kvctl_parse_subcommand 0 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            case 'revoke'
                __kvctl_parse_subcommand 1 'keep=+' 'recovery-file=' 'yes' 'kdf=' 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            case 'prune'
                __kvctl_parse_subcommand 0 'unseen-for=' 'recovery-file=' 'yes' 'kdf=' 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            end
        case 'member'
            __kvctl_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'add'
                __kvctl_parse_subcommand 1 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            case 'list'
                __kvctl_parse_subcommand 0 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            case 'rotate'
                __kvctl_parse_subcommand 1 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            case 'share'
                __kvctl_parse_subcommand 1 'with=' 'read-only' 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            case 'unshare'
                __kvctl_parse_subcommand 1 'with=' 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            end
        case 'contact'
            __kvctl_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'add'
                __kvctl_parse_subcommand 1 'code=' 'poll=' 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            case 'list'
                __kvctl_parse_subcommand 0 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            end
        case 'shared'
            __kvctl_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'list'
                __kvctl_parse_subcommand 0 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            end
        case 'master'
            __kvctl_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'rotate'
                __kvctl_parse_subcommand 0 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            end
        case 'recovery'
            __kvctl_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'generate'
                __kvctl_parse_subcommand 0 'words=' 'language=' 'json' 'version' 'h/help'
            case 'verify'
                __kvctl_parse_subcommand 0 'show-entropy' 'seed' 'passphrase-file=' 'language=' 'json' 'version' 'h/help'
            case 'quiz'
                __kvctl_parse_subcommand 0 'count=' 'json' 'version' 'h/help'
            case 'rotate'
                __kvctl_parse_subcommand 0 'recovery-file=' 'yes' 'kdf=' 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            end
        case 'attachment'
            __kvctl_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'address'
                __kvctl_parse_subcommand 1 'member=' 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            case 'put'
                __kvctl_parse_subcommand 1 'member=' 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            case 'get'
                __kvctl_parse_subcommand 1 'member=' 'o/output=' 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            case 'list'
                __kvctl_parse_subcommand 0 'member=' 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            case 'rewrap'
                __kvctl_parse_subcommand 0 'member=' 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            end
        case 'audit'
            __kvctl_parse_subcommand 0 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
        case 'account'
            __kvctl_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'delete'
                __kvctl_parse_subcommand 0 'yes' 'home=' 'json' 'insecure-http' 'ca-cert=' 'version' 'h/help'
            end
        case 'completion'
            __kvctl_parse_subcommand 1 'name=' 'version' 'h/help'
        case 'manual'
            __kvctl_parse_subcommand 0 'name=' 'version' 'h/help'
        case 'serve'
            __kvctl_parse_subcommand 0 'host=' 'port=' 'database=' 'max-attachment-bytes=' 'log-level=' 'trusted-proxy=+' 'secret-file=' 'tls-cert=' 'tls-key=' 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'backup'
                __kvctl_parse_subcommand 0 'to=' 'version' 'h/help'
            end
        case 'help'
            __kvctl_parse_subcommand -r 1 'version'
        end
    end
end

function __kvctl_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __kvctl_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __kvctl_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __kvctl_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__kvctl_tokens -p)
    if test -z "$(__kvctl_tokens -t)"
        set -l index (count (__kvctl_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'kvctl' -f
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl" -eq 1' -fa 'init' -d 'Create an account with this computer as its first device.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl" -eq 1' -fa 'status' -d 'Show this device\'s account, the chain head and key generations.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl" -eq 1' -fa 'device' -d 'Add, list and revoke the devices of the account.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl" -eq 1' -fa 'member' -d 'Family members: each has its own key for its attachments.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl" -eq 1' -fa 'contact' -d 'Other accounts this one has verified, to share members with.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl" -eq 1' -fa 'shared' -d 'Members other accounts share with this one.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl" -eq 1' -fa 'master' -d 'The account\'s master key.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl" -eq 1' -fa 'recovery' -d 'Make and check recovery codes (24 words that can rebuild your keys).'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl" -eq 1' -fa 'attachment' -d 'Seal, upload, fetch and re-wrap a member\'s attachments.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl" -eq 1' -fa 'audit' -d 'Verify everything the server holds for this account.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl" -eq 1' -fa 'account' -d 'Delete the whole account.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl" -eq 1' -fa 'completion' -d 'Print a shell completion script for bash, zsh or fish.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl" -eq 1' -fa 'manual' -d 'Print keyctl\'s manual page (roff), made from its commands\' help.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl" -eq 1' -fa 'serve' -d 'Run the KeyVault service (HTTP or HTTPS, embedded SQLite or PostgreSQL).'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl init" server' -l 'server' -d 'The KeyVault server, e.g. https://keys.example.org, or http://127.0.0.1:8080 on this machine (plain http:// elsewhere needs --insecure-http).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl init" invite' -l 'invite' -d 'The server\'s invite token, if it takes new accounts by invitation (KEYCTL_INVITE or --invite-file keep it out of the process list).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl init" invite-file' -l 'invite-file' -d 'A file holding the server\'s invite token (its first line).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl init" name' -l 'name' -d 'A name for this device, shown to your other devices (1-100 characters).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl init" recovery-file' -l 'recovery-file' -d 'Write the recovery code to this new file (mode 0600) instead of showing it.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl init" yes' -l 'yes' -d 'Do not ask for confirmation, nor for words of the new recovery code back.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl init" kdf' -l 'kdf' -d 'Argon2id cost of the recovery code: interactive, recovery, moderate or sensitive.' -rfka 'floor interactive recovery moderate sensitive'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl init" passphrase' -l 'passphrase' -d 'Seal this device\'s keys under a passphrase (asked on the terminal, or read from the file in KEYCTL_PASSPHRASE_FILE).'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl init" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl init" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl init" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl init" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl init" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl init" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl status" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl status" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl status" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl status" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl status" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl status" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl device" -eq 1' -fa 'enroll' -d 'Join an account with its recovery code.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl device" -eq 1' -fa 'link' -d 'Ask a device of the account to add this one.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl device" -eq 1' -fa 'approve' -d 'Approve a new device\'s link request.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl device" -eq 1' -fa 'list' -d 'List the devices of the account.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl device" -eq 1' -fa 'revoke' -d 'Remove a device from the account, with what it did, and rotate every key away from it.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl device" -eq 1' -fa 'prune' -d 'Revoke every device not seen for a while, in one rotation.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device enroll" server' -l 'server' -d 'The KeyVault server, e.g. https://keys.example.org, or http://127.0.0.1:8080 on this machine (plain http:// elsewhere needs --insecure-http).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device enroll" account' -l 'account' -d 'The account id (32 hex digits) that `keyctl init` printed.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device enroll" name' -l 'name' -d 'A name for this device, shown to your other devices (1-100 characters).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device enroll" passphrase' -l 'passphrase' -d 'Seal this device\'s keys under a passphrase (asked on the terminal, or read from the file in KEYCTL_PASSPHRASE_FILE).'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device enroll" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device enroll" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device enroll" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device enroll" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device enroll" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device enroll" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device link" server' -l 'server' -d 'The KeyVault server, e.g. https://keys.example.org, or http://127.0.0.1:8080 on this machine (plain http:// elsewhere needs --insecure-http).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device link" account' -l 'account' -d 'The account id (32 hex digits) that `keyctl init` printed.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device link" name' -l 'name' -d 'A name for this device, shown to your other devices (1-100 characters).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device link" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device link" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device link" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device link" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device link" poll' -l 'poll' -d 'Seconds between checks for an answer.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device link" passphrase' -l 'passphrase' -d 'Seal this device\'s keys under a passphrase (asked on the terminal, or read from the file in KEYCTL_PASSPHRASE_FILE).'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device link" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device link" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device approve" poll' -l 'poll' -d 'Seconds between checks for the new device\'s answer.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device approve" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device approve" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device approve" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device approve" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device approve" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device approve" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device list" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device list" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device list" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device list" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device list" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device revoke"' -l 'keep' -d 'A device the revoked one added, or a contact account it pinned or shared with, that stays (repeatable).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device revoke" recovery-file' -l 'recovery-file' -d 'Write the recovery code to this new file (mode 0600) instead of showing it.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device revoke" yes' -l 'yes' -d 'Do not ask for confirmation, nor for words of the new recovery code back.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device revoke" kdf' -l 'kdf' -d 'Argon2id cost of the recovery code: interactive, recovery, moderate or sensitive.' -rfka 'floor interactive recovery moderate sensitive'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device revoke" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device revoke" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device revoke" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device revoke" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device revoke" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device revoke" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device prune" unseen-for' -l 'unseen-for' -d 'How long unseen: days, such as 90d.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device prune" recovery-file' -l 'recovery-file' -d 'Write the recovery code to this new file (mode 0600) instead of showing it.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device prune" yes' -l 'yes' -d 'Do not ask for confirmation, nor for words of the new recovery code back.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device prune" kdf' -l 'kdf' -d 'Argon2id cost of the recovery code: interactive, recovery, moderate or sensitive.' -rfka 'floor interactive recovery moderate sensitive'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device prune" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device prune" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device prune" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device prune" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device prune" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl device prune" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl member" -eq 1' -fa 'add' -d 'Add a member with a new member key.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl member" -eq 1' -fa 'list' -d 'List the members, and the accounts each is shared with.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl member" -eq 1' -fa 'rotate' -d 'Make a new generation of a member\'s key.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl member" -eq 1' -fa 'share' -d 'Share a member with a verified contact.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl member" -eq 1' -fa 'unshare' -d 'Take a shared member back.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member add" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member add" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member add" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member add" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member add" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member add" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member list" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member list" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member list" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member list" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member list" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member rotate" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member rotate" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member rotate" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member rotate" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member rotate" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member rotate" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member share" with' -l 'with' -d 'The other account\'s id (`keyctl contact list` shows your contacts).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member share" read-only' -l 'read-only' -d 'The other account may read attachments but not put any.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member share" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member share" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member share" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member share" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member share" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member share" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member unshare" with' -l 'with' -d 'The other account\'s id (`keyctl contact list` shows your contacts).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member unshare" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member unshare" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member unshare" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member unshare" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member unshare" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl member unshare" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl contact" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl contact" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl contact" -eq 1' -fa 'add' -d 'Verify another account\'s sharing identity with its person, and pin it.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl contact" -eq 1' -fa 'list' -d 'List the verified contacts.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl contact add" code' -l 'code' -d 'The safety code the other person reads out (6 digits).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl contact add" poll' -l 'poll' -d 'Seconds between checks for the other side.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl contact add" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl contact add" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl contact add" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl contact add" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl contact add" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl contact add" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl contact list" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl contact list" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl contact list" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl contact list" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl contact list" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl contact list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl shared" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl shared" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl shared" -eq 1' -fa 'list' -d 'List the members other accounts share with this one.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl shared list" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl shared list" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl shared list" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl shared list" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl shared list" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl shared list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl master" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl master" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl master" -eq 1' -fa 'rotate' -d 'Make a new master key generation for the active devices and the recovery code.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl master rotate" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl master rotate" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl master rotate" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl master rotate" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl master rotate" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl master rotate" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl recovery" -eq 1' -fa 'generate' -d 'Print a fresh recovery code.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl recovery" -eq 1' -fa 'verify' -d 'Check a recovery code read from standard input.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl recovery" -eq 1' -fa 'quiz' -d 'Prove a written-down code is complete by answering a few of its words.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl recovery" -eq 1' -fa 'rotate' -d 'Replace the account\'s recovery code with a new one.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery generate" words' -l 'words' -d 'How many words: 12, 15, 18, 21 or 24.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery generate" language' -l 'language' -d 'Wordlist: english, japanese, korean, spanish, chinese_simplified, chinese_traditional, french, italian, czech or portuguese.' -rfka 'english japanese korean spanish chinese_simplified chinese_traditional french italian czech portuguese'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery generate" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery generate" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery generate" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery verify" show-entropy' -l 'show-entropy' -d 'Also print the code\'s entropy (secret!) as hex.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery verify" seed' -l 'seed' -d 'Also print the 64-byte BIP39 seed (secret!) as hex.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery verify" passphrase-file' -l 'passphrase-file' -d 'Read the BIP39 passphrase for --seed from this file (one trailing newline is removed).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery verify" language' -l 'language' -d 'Only accept this wordlist (default: detect).' -rfka 'english japanese korean spanish chinese_simplified chinese_traditional french italian czech portuguese'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery verify" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery verify" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery verify" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery quiz" count' -l 'count' -d 'How many words to ask for (1 to the code\'s length).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery quiz" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery quiz" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery quiz" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery rotate" recovery-file' -l 'recovery-file' -d 'Write the recovery code to this new file (mode 0600) instead of showing it.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery rotate" yes' -l 'yes' -d 'Do not ask for confirmation, nor for words of the new recovery code back.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery rotate" kdf' -l 'kdf' -d 'Argon2id cost of the recovery code: interactive, recovery, moderate or sensitive.' -rfka 'floor interactive recovery moderate sensitive'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery rotate" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery rotate" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery rotate" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery rotate" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery rotate" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl recovery rotate" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl attachment" -eq 1' -fa 'address' -d 'Print a file\'s content address for a member (nothing is uploaded).'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl attachment" -eq 1' -fa 'put' -d 'Seal a file for a member and upload it.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl attachment" -eq 1' -fa 'get' -d 'Fetch an attachment, open it and check it against its address.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl attachment" -eq 1' -fa 'list' -d 'List a member\'s attachments.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl attachment" -eq 1' -fa 'rewrap' -d 'Re-wrap a member\'s attachment keys under its newest key generation.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment address" member' -l 'member' -d 'The member\'s name or id.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment address" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment address" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment address" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment address" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment address" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment address" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment put" member' -l 'member' -d 'The member\'s name or id.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment put" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment put" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment put" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment put" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment put" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment put" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment get" member' -l 'member' -d 'The member\'s name or id.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment get" o output' -l 'output' -s 'o' -d 'Write to this file instead of standard output.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment get" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment get" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment get" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment get" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment get" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment get" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment list" member' -l 'member' -d 'The member\'s name or id.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment list" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment list" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment list" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment list" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment list" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment rewrap" member' -l 'member' -d 'The member\'s name or id.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment rewrap" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment rewrap" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment rewrap" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment rewrap" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment rewrap" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl attachment rewrap" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl audit" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl audit" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl audit" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl audit" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl audit" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl audit" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl account" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl account" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl account" -eq 1' -fa 'delete' -d 'Delete everything of the account on the server, then this device\'s keys.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl account delete" yes' -l 'yes' -d 'Do not ask for confirmation.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl account delete" home' -l 'home' -d 'This device\'s home directory (default: $KEYCTL_HOME, else ~/.keyctl).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl account delete" json' -l 'json' -d 'Print JSON objects, one per line; the last line is the result.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl account delete" insecure-http' -l 'insecure-http' -d 'Allow plain http:// to a server that is not this machine.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl account delete" ca-cert' -l 'ca-cert' -d 'Trust this certificate authority (a PEM file) for the https:// server, beside the system\'s (default: $KEYCTL_CA_CERT).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl account delete" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl account delete" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl completion" -eq 1' -fka 'bash zsh fish'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl completion" name' -l 'name' -d 'The name keyctl is installed as (default: the name it was run as).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl completion" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl completion" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl manual" name' -l 'name' -d 'The name keyctl is installed as (default: the name it was run as).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl manual" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl manual" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl serve" host' -l 'host' -d 'Address to listen on.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl serve" port' -l 'port' -d 'Port to listen on (0 picks a free one).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl serve" database' -l 'database' -d 'SQLite database file, created if missing; or postgres://USER[:PASSWORD]@HOST[:PORT]/DB, or postgres://USER@/DB?host=/socket/dir.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl serve" max-attachment-bytes' -l 'max-attachment-bytes' -d 'Largest attachment accepted, in bytes (up to 1 TiB; a PUT whole takes up to 64 MiB, larger ones come in chunks).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl serve" log-level' -l 'log-level' -d 'Log level: trace, debug, info, notice, warning, error, critical.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl serve"' -l 'trusted-proxy' -d 'A reverse proxy (CIDR, IPv4 or IPv6) whose X-Forwarded-For names the client; repeat or separate with commas.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl serve" secret-file' -l 'secret-file' -d 'The secret every replica on one database shares (sessions, recovery challenges): 64 hex digits, mode 0600, made here on first start when missing. Give every replica the same file.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl serve" tls-cert' -l 'tls-cert' -d 'Serve HTTPS with this PEM certificate (then its intermediates); needs --tls-key.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl serve" tls-key' -l 'tls-key' -d 'The certificate\'s PEM private key, unencrypted, not readable by other users (0600 or 0640).' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl serve" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl serve" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_positional "kvctl serve" -eq 1' -fa 'backup' -d 'Copy the service\'s SQLite database, consistently, while it serves.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl serve backup" to' -l 'to' -d 'Where to write the copy: a file that does not exist yet.' -rfka ''
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl serve backup" version' -l 'version' -d 'Show the version.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl serve backup" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'kvctl' -n '__kvctl_should_offer_completions_for_flags_or_options "kvctl help" version' -l 'version' -d 'Show the version.'
