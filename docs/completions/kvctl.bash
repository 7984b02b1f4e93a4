#!/bin/bash

__kvctl_cursor_index_in_current_word() {
    local remaining="${COMP_LINE}"

    local word
    for word in "${COMP_WORDS[@]::COMP_CWORD}"; do
        remaining="${remaining##*([[:space:]])"${word}"*([[:space:]])}"
    done

    local -ir index="$((COMP_POINT - ${#COMP_LINE} + ${#remaining}))"
    if [[ "${index}" -le 0 ]]; then
        printf 0
    else
        printf %s "${index}"
    fi
}

# positional arguments:
#
# - 1: the current (sub)command's count of positional arguments
#
# required variables:
#
# - repeating_flags: the repeating flags that the current (sub)command can accept
# - non_repeating_flags: the non-repeating flags that the current (sub)command can accept
# - repeating_options: the repeating options that the current (sub)command can accept
# - non_repeating_options: the non-repeating options that the current (sub)command can accept
# - positional_number: value ignored
# - unparsed_words: unparsed words from the current command line
#
# modified variables:
#
# - non_repeating_flags: remove flags for this (sub)command that are already on the command line
# - non_repeating_options: remove options for this (sub)command that are already on the command line
# - positional_number: set to the current positional number
# - unparsed_words: remove all flags, options, and option values for this (sub)command
__kvctl_offer_flags_options() {
    local -ir positional_count="${1}"
    positional_number=0

    local was_flag_option_terminator_seen=false
    local is_parsing_option_value=false

    local -ar unparsed_word_indices=("${!unparsed_words[@]}")
    local -i word_index
    for word_index in "${unparsed_word_indices[@]}"; do
        if "${is_parsing_option_value}"; then
            # This word is an option value:
            # Reset marker for next word iff not currently the last word
            [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]] && is_parsing_option_value=false
            unset "unparsed_words[${word_index}]"
            # Do not process this word as a flag or an option
            continue
        fi

        local word="${unparsed_words["${word_index}"]}"
        if ! "${was_flag_option_terminator_seen}"; then
            case "${word}" in
            --)
                unset "unparsed_words[${word_index}]"
                # by itself -- is a flag/option terminator, but if it is the last word, it is the start of a completion
                if [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]]; then
                    was_flag_option_terminator_seen=true
                fi
                continue
                ;;
            -*)
                # ${word} is a flag or an option
                # If ${word} is an option, mark that the next word to be parsed is an option value
                local option
                for option in "${repeating_options[@]}" "${non_repeating_options[@]}"; do
                    [[ "${word}" = "${option}" ]] && is_parsing_option_value=true && break
                done

                # Remove ${word} from ${non_repeating_flags} or ${non_repeating_options} so it isn't offered again
                local not_found=true
                local -i index
                for index in "${!non_repeating_flags[@]}"; do
                    if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                        unset "non_repeating_flags[${index}]"
                        non_repeating_flags=("${non_repeating_flags[@]}")
                        not_found=false
                        break
                    fi
                done
                if "${not_found}"; then
                    for index in "${!non_repeating_flags[@]}"; do
                        if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                            unset "non_repeating_flags[${index}]"
                            non_repeating_flags=("${non_repeating_flags[@]}")
                            break
                        fi
                    done
                fi
                unset "unparsed_words[${word_index}]"
                continue
                ;;
            esac
        fi

        # ${word} is neither a flag, nor an option, nor an option value
        if [[ "${positional_number}" -lt "${positional_count}" || "${positional_count}" -lt 0 ]]; then
            # ${word} is a positional
            ((positional_number++))
            unset "unparsed_words[${word_index}]"
        else
            if [[ -z "${word}" ]]; then
                # Could be completing a flag, option, or subcommand
                positional_number=-1
            else
                # ${word} is a subcommand or invalid, so stop processing this (sub)command
                positional_number=-2
            fi
            break
        fi
    done

    unparsed_words=("${unparsed_words[@]}")

    if\
        ! "${was_flag_option_terminator_seen}"\
        && ! "${is_parsing_option_value}"\
        && [[ ("${cur}" = -* && "${positional_number}" -ge 0) || "${positional_number}" -eq -1 ]]
    then
        COMPREPLY+=($(compgen -W "${repeating_flags[*]} ${non_repeating_flags[*]} ${repeating_options[*]} ${non_repeating_options[*]}" -- "${cur}"))
    fi
}

__kvctl_add_completions() {
    local completion
    while IFS='' read -r completion; do
        COMPREPLY+=("${completion}")
    done < <(IFS=$'\n' compgen "${@}" -- "${cur}")
}

__kvctl_custom_complete() {
    if [[ -n "${cur}" || -z ${COMP_WORDS[${COMP_CWORD}]} || "${COMP_LINE:${COMP_POINT}:1}" != ' ' ]]; then
        local -ar words=("${COMP_WORDS[@]}")
    else
        local -ar words=("${COMP_WORDS[@]::${COMP_CWORD}}" '' "${COMP_WORDS[@]:${COMP_CWORD}}")
    fi

    "${COMP_WORDS[0]}" "${@}" "${words[@]}"
}

_kvctl() {
    local state
    state="$(shopt -p;shopt -po)"
    trap "${state//$'\n'/;}" RETURN
    shopt -s extglob
    set +o history +o posix

    local -xr SAP_SHELL=bash
    local -x SAP_SHELL_VERSION
    SAP_SHELL_VERSION="$(IFS='.';printf %s "${BASH_VERSINFO[*]}")"
    local -r SAP_SHELL_VERSION

    local -r cur="${2}"
    local -r prev="${3}"

    local -i positional_number
    local -a unparsed_words=("${COMP_WORDS[@]:1:${COMP_CWORD}}")

    local -a repeating_flags=()
    local -a non_repeating_flags=(--version -h --help)
    local -a repeating_options=()
    local -a non_repeating_options=()
    __kvctl_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    init|status|device|member|contact|shared|master|recovery|attachment|audit|account|server|completion|manual|serve|help)
        # Offer subcommand argument completions
        "_kvctl_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'init status device member contact shared master recovery attachment audit account server completion manual serve help' -- "${cur}"))
        ;;
    esac
}

_kvctl_init() {
    repeating_flags=()
    non_repeating_flags=(--yes --passphrase --json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--server --invite --invite-file --name --recovery-file --kdf --home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--server')
        return
        ;;
    '--invite')
        return
        ;;
    '--invite-file')
        return
        ;;
    '--name')
        return
        ;;
    '--recovery-file')
        return
        ;;
    '--kdf')
        __kvctl_add_completions -W 'floor'$'\n''interactive'$'\n''recovery'$'\n''moderate'$'\n''sensitive'
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_status() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_device() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __kvctl_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    enroll|link|approve|list|revoke|prune|passphrase)
        # Offer subcommand argument completions
        "_kvctl_device_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'enroll link approve list revoke prune passphrase' -- "${cur}"))
        ;;
    esac
}

_kvctl_device_enroll() {
    repeating_flags=()
    non_repeating_flags=(--passphrase --json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--server --account --name --home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--server')
        return
        ;;
    '--account')
        return
        ;;
    '--name')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_device_link() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --passphrase --version -h --help)
    repeating_options=()
    non_repeating_options=(--server --account --name --home --ca-cert --poll)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--server')
        return
        ;;
    '--account')
        return
        ;;
    '--name')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    '--poll')
        return
        ;;
    esac
}

_kvctl_device_approve() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--poll --home --ca-cert)
    __kvctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--poll')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_device_list() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_device_revoke() {
    repeating_flags=()
    non_repeating_flags=(--yes --json --insecure-http --version -h --help)
    repeating_options=(--keep)
    non_repeating_options=(--recovery-file --kdf --home --ca-cert)
    __kvctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--keep')
        return
        ;;
    '--recovery-file')
        return
        ;;
    '--kdf')
        __kvctl_add_completions -W 'floor'$'\n''interactive'$'\n''recovery'$'\n''moderate'$'\n''sensitive'
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_device_prune() {
    repeating_flags=()
    non_repeating_flags=(--yes --json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--unseen-for --recovery-file --kdf --home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--unseen-for')
        return
        ;;
    '--recovery-file')
        return
        ;;
    '--kdf')
        __kvctl_add_completions -W 'floor'$'\n''interactive'$'\n''recovery'$'\n''moderate'$'\n''sensitive'
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_device_passphrase() {
    repeating_flags=()
    non_repeating_flags=(--remove --yes --json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--new-passphrase-file --home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--new-passphrase-file')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_member() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __kvctl_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    add|list|rename|remove|rotate|share|unshare)
        # Offer subcommand argument completions
        "_kvctl_member_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'add list rename remove rotate share unshare' -- "${cur}"))
        ;;
    esac
}

_kvctl_member_add() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--home --ca-cert)
    __kvctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_member_list() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_member_rename() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--home --ca-cert)
    __kvctl_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_member_remove() {
    repeating_flags=()
    non_repeating_flags=(--yes --json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--home --ca-cert)
    __kvctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_member_rotate() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--home --ca-cert)
    __kvctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_member_share() {
    repeating_flags=()
    non_repeating_flags=(--read-only --json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--with --home --ca-cert)
    __kvctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--with')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_member_unshare() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--with --home --ca-cert)
    __kvctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--with')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_contact() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __kvctl_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    add|list)
        # Offer subcommand argument completions
        "_kvctl_contact_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'add list' -- "${cur}"))
        ;;
    esac
}

_kvctl_contact_add() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--code --poll --home --ca-cert)
    __kvctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--code')
        return
        ;;
    '--poll')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_contact_list() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_shared() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __kvctl_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    list)
        # Offer subcommand argument completions
        "_kvctl_shared_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'list' -- "${cur}"))
        ;;
    esac
}

_kvctl_shared_list() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_master() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __kvctl_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    rotate)
        # Offer subcommand argument completions
        "_kvctl_master_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'rotate' -- "${cur}"))
        ;;
    esac
}

_kvctl_master_rotate() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_recovery() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __kvctl_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    generate|verify|quiz|rotate)
        # Offer subcommand argument completions
        "_kvctl_recovery_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'generate verify quiz rotate' -- "${cur}"))
        ;;
    esac
}

_kvctl_recovery_generate() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--words --language)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--words')
        return
        ;;
    '--language')
        __kvctl_add_completions -W 'english'$'\n''japanese'$'\n''korean'$'\n''spanish'$'\n''chinese_simplified'$'\n''chinese_traditional'$'\n''french'$'\n''italian'$'\n''czech'$'\n''portuguese'
        return
        ;;
    esac
}

_kvctl_recovery_verify() {
    repeating_flags=()
    non_repeating_flags=(--show-entropy --seed --json --version -h --help)
    repeating_options=()
    non_repeating_options=(--passphrase-file --language)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--passphrase-file')
        return
        ;;
    '--language')
        __kvctl_add_completions -W 'english'$'\n''japanese'$'\n''korean'$'\n''spanish'$'\n''chinese_simplified'$'\n''chinese_traditional'$'\n''french'$'\n''italian'$'\n''czech'$'\n''portuguese'
        return
        ;;
    esac
}

_kvctl_recovery_quiz() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--count)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--count')
        return
        ;;
    esac
}

_kvctl_recovery_rotate() {
    repeating_flags=()
    non_repeating_flags=(--yes --json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--recovery-file --kdf --home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--recovery-file')
        return
        ;;
    '--kdf')
        __kvctl_add_completions -W 'floor'$'\n''interactive'$'\n''recovery'$'\n''moderate'$'\n''sensitive'
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_attachment() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __kvctl_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    address|put|get|list|rename|delete|export|rewrap)
        # Offer subcommand argument completions
        "_kvctl_attachment_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'address put get list rename delete export rewrap' -- "${cur}"))
        ;;
    esac
}

_kvctl_attachment_address() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--member --home --ca-cert)
    __kvctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--member')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_attachment_put() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--member --home --ca-cert)
    __kvctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--member')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_attachment_get() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--member --output -o --home --ca-cert)
    __kvctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--member')
        return
        ;;
    '--output'|'-o')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_attachment_list() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--member --home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--member')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_attachment_rename() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--member --type --home --ca-cert)
    __kvctl_offer_flags_options 2

    # Offer option value completions
    case "${prev}" in
    '--member')
        return
        ;;
    '--type')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_attachment_delete() {
    repeating_flags=()
    non_repeating_flags=(--yes --json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--member --home --ca-cert)
    __kvctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--member')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_attachment_export() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--member --to --home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--member')
        return
        ;;
    '--to')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_attachment_rewrap() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--member --home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--member')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_audit() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __kvctl_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    check|log)
        # Offer subcommand argument completions
        "_kvctl_audit_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'check log' -- "${cur}"))
        ;;
    esac
}

_kvctl_audit_check() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_audit_log() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_account() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __kvctl_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    delete|reset|export|import)
        # Offer subcommand argument completions
        "_kvctl_account_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'delete reset export import' -- "${cur}"))
        ;;
    esac
}

_kvctl_account_delete() {
    repeating_flags=()
    non_repeating_flags=(--yes --json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--old-server --home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--old-server')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_account_reset() {
    repeating_flags=()
    non_repeating_flags=(--yes --json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--recovery-file --kdf --home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--recovery-file')
        return
        ;;
    '--kdf')
        __kvctl_add_completions -W 'floor'$'\n''interactive'$'\n''recovery'$'\n''moderate'$'\n''sensitive'
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_account_export() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--to --home --ca-cert)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--to')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_account_import() {
    repeating_flags=()
    non_repeating_flags=(--keep-old-copy --json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--server --invite --invite-file --home --ca-cert)
    __kvctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--server')
        return
        ;;
    '--invite')
        return
        ;;
    '--invite-file')
        return
        ;;
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_server() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __kvctl_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    move)
        # Offer subcommand argument completions
        "_kvctl_server_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'move' -- "${cur}"))
        ;;
    esac
}

_kvctl_server_move() {
    repeating_flags=()
    non_repeating_flags=(--json --insecure-http --version -h --help)
    repeating_options=()
    non_repeating_options=(--home --ca-cert)
    __kvctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--home')
        return
        ;;
    '--ca-cert')
        return
        ;;
    esac
}

_kvctl_completion() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--name)
    __kvctl_offer_flags_options 1

    # Offer option value completions
    case "${prev}" in
    '--name')
        return
        ;;
    esac

    # Offer positional completions
    case "${positional_number}" in
    1)
        __kvctl_add_completions -W 'bash'$'\n''zsh'$'\n''fish'
        return
        ;;
    esac
}

_kvctl_manual() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--name)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--name')
        return
        ;;
    esac
}

_kvctl_serve() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=(--trusted-proxy)
    non_repeating_options=(--host --port --database --max-attachment-bytes --log-level --secret-file --tls-cert --tls-key)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--host')
        return
        ;;
    '--port')
        return
        ;;
    '--database')
        return
        ;;
    '--max-attachment-bytes')
        return
        ;;
    '--log-level')
        return
        ;;
    '--trusted-proxy')
        return
        ;;
    '--secret-file')
        return
        ;;
    '--tls-cert')
        return
        ;;
    '--tls-key')
        return
        ;;
    esac

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    backup)
        # Offer subcommand argument completions
        "_kvctl_serve_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'backup' -- "${cur}"))
        ;;
    esac
}

_kvctl_serve_backup() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--to)
    __kvctl_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--to')
        return
        ;;
    esac
}

_kvctl_help() {
    repeating_flags=()
    non_repeating_flags=(--version)
    repeating_options=()
    non_repeating_options=()
    __kvctl_offer_flags_options -1
}

complete -o filenames -F _kvctl kvctl
